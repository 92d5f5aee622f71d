// Internal: the filter and test tables behind registry.h, split over several files by theme.
#pragma once
#include <map>
#include <string>

#include "chat/jinja/args.h"
#include "chat/jinja/interpreter.h"
#include "chat/jinja/value.h"

namespace gs::jinja {

using FilterFn = Value (*)(Interpreter& in, const Value& input, CallArgs& args);
using FilterTable = std::map<std::string, FilterFn>;
using TestFn = bool (*)(Interpreter& in, const Value& input, CallArgs& args);
using TestTable = std::map<std::string, TestFn>;

void add_text_filters(FilterTable& t);      // filters_text.cpp
void add_sequence_filters(FilterTable& t);  // filters_seq.cpp
void add_tests(TestTable& t);               // predicates.cpp

// jinja2's make_attrgetter: "a.b.0" looked up item by item (through the sandbox), with a
// default for undefined results when `def` is given.
Value lookup_attribute_path(Interpreter& in, const Value& item, const Value& path, const Value* def = nullptr);

}  // namespace gs::jinja
