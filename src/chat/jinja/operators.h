// Python's arithmetic, membership and %-formatting on template values (ints are 64-bit here:
// overflow is an error instead of a big integer).
#pragma once
#include "chat/jinja/ast.h"
#include "chat/jinja/value.h"

namespace gs::jinja {

Value binary_op(BinOp op, const Value& a, const Value& b);
Value negate(const Value& v);
Value unary_plus(const Value& v);
bool contains(const Value& container, const Value& item);  // `item in container`
// printf-style `format % args` (str % value).
std::string percent_format(const std::string& format, const Value& args);

// Largest string an operation may build (guards `'x' * 10**9` and runaway concatenation).
inline constexpr size_t kMaxStringBytes = size_t{64} << 20;
void check_string_size(size_t bytes);

}  // namespace gs::jinja
