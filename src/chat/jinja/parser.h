// Builds the syntax tree from tokens, following jinja2's grammar and operator precedence
// (including its quirks: `**` is left-associative, filters bind tighter than unary minus's
// operand, tests take one bare argument). Unknown filters and tests are errors at parse time
// except inside if-branches and conditional expressions, where jinja2 defers them to runtime.
#pragma once
#include <string_view>

#include "chat/jinja/ast.h"

namespace gs::jinja {

// Throws gs::Error("template syntax error (line N): ...").
Body parse_template(std::string_view source);

}  // namespace gs::jinja
