// Python's str() and repr() of template values: what `{{ value }}` prints in jinja2.
#pragma once
#include <string>
#include <string_view>

#include "chat/jinja/value.h"

namespace gs::jinja {

std::string py_str(const Value& v);   // str(): strings as is, None -> "None", [1, 'a'] -> "[1, 'a']"
std::string py_repr(const Value& v);  // repr(): strings quoted and escaped like Python
std::string float_repr(double d);     // repr(float): shortest round-trip digits, Python's layout
std::string string_repr(std::string_view s);

}  // namespace gs::jinja
