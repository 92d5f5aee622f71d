// Python's str.format() (what jinja2's sandbox allows: fields by position or name, attribute and
// item lookup through the sandbox, !r/!s conversions and the common format-spec mini-language).
#pragma once
#include <string>

#include "chat/jinja/value.h"

namespace gs::jinja {

std::string str_format(Interpreter& in, const std::string& fmt, const CallArgs& args);
// format(value, spec), e.g. spec ">8", ".2f", "05d".
std::string format_value(const Value& v, const std::string& spec);

}  // namespace gs::jinja
