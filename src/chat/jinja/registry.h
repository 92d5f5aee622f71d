// Names of the filters, tests and globals the interpreter provides (the parser validates filter
// and test names against these, like jinja2's compiler does).
#pragma once
#include <string>

#include "chat/jinja/value.h"

namespace gs::jinja {

bool is_known_filter(const std::string& name);
bool is_known_test(const std::string& name);

// Applies filter `name` to `input`. Throws gs::Error for unknown filters and bad arguments.
Value apply_filter(Interpreter& in, const std::string& name, const Value& input, CallArgs& args);
// Evaluates test `name` on `input`.
bool apply_test(Interpreter& in, const std::string& name, const Value& input, CallArgs& args);

}  // namespace gs::jinja
