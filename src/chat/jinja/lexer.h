// Splits template source into tokens exactly like jinja2's lexer configured the way transformers
// configures it (trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=False): template
// data, `{{ }}` / `{% %}` delimiters, and the expression tokens inside them. Comments vanish,
// `{% raw %}` bodies become data, whitespace control (`-`, `+`) is applied here.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gs::jinja {

enum class TokenType : uint8_t {
  Data,
  VariableBegin,
  VariableEnd,
  BlockBegin,
  BlockEnd,
  Name,
  String,
  Integer,
  Float,
  Operator,  // value holds the operator text: "+", "//", "==", "(", ...
  Eof,
};

struct Token {
  TokenType type;
  std::string value;  // data text, name, decoded string literal, or operator
  int line = 1;
  int64_t int_value = 0;
  double float_value = 0;
};

struct LexerOptions {
  bool trim_blocks = true;
  bool lstrip_blocks = true;
  bool keep_trailing_newline = false;
};

// Throws gs::Error("template syntax error (line N): ...") on malformed input.
std::vector<Token> tokenize(std::string_view source, const LexerOptions& opt = {});

std::string describe(const Token& t);  // for error messages: "'}}'", "end of template", ...

}  // namespace gs::jinja
