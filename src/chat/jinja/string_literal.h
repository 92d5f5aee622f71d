// Decodes the body of a quoted string literal in a template the way jinja2 does: Python's
// "unicode-escape" codec applied after "backslashreplace" of non-ASCII characters.
#pragma once
#include <string>
#include <string_view>

namespace gs::jinja {

// `body` is the text between the quotes; throws a template syntax error naming `line`.
std::string decode_string_literal(std::string_view body, int line);

}  // namespace gs::jinja
