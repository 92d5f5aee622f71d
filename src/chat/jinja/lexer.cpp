#include "chat/jinja/lexer.h"

#include <cstdlib>

#include "chat/jinja/string_literal.h"
#include "chat/jinja/utf8.h"
#include "core/error.h"

namespace gs::jinja {

namespace {

[[noreturn]] void fail(int line, const std::string& msg) {
  throw Error("template syntax error (line {}): {}", line, msg);
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

// Length of the Unicode whitespace run at `pos` (Python's \s), 0 if none.
size_t whitespace_run(std::string_view s, size_t pos) {
  std::string_view rest = s.substr(pos);
  return rest.size() - utf8::strip(rest, true, false).size();
}

// Digits with optional single underscores between them: (\d+_)*\d+ ; returns end or npos.
size_t digit_run(std::string_view s, size_t pos) {
  if (pos >= s.size() || !is_digit(s[pos])) return std::string_view::npos;
  size_t i = pos;
  while (true) {
    while (i < s.size() && is_digit(s[i])) ++i;
    if (i + 1 < s.size() && s[i] == '_' && is_digit(s[i + 1])) {
      ++i;
      continue;
    }
    return i;
  }
}

std::string without_underscores(std::string_view s) {
  std::string out;
  for (char c : s)
    if (c != '_') out += c;
  return out;
}

class Lexer {
 public:
  Lexer(std::string src, const LexerOptions& opt) : src_(std::move(src)), opt_(opt) {}

  std::vector<Token> run() {
    while (pos_ < src_.size()) {
      size_t p = find_tag_start(pos_);
      if (p == std::string::npos) {
        emit_data(src_.substr(pos_), line_);
        advance_to(src_.size());
        break;
      }
      char kind = src_[p + 1];
      char sign = (p + 2 < src_.size() && (src_[p + 2] == '-' || src_[p + 2] == '+')) ? src_[p + 2] : 0;
      std::string text = src_.substr(pos_, p - pos_);
      bool line_starting = pos_ == 0 || src_[pos_ - 1] == '\n';
      int text_line = line_;
      strip_before_tag(text, sign, kind != '{', line_starting);
      emit_data(text, text_line);
      advance_to(p);
      size_t raw_end = kind == '%' ? match_raw_begin(p) : std::string::npos;
      if (raw_end != std::string::npos) {
        advance_to(raw_end);
        lex_raw_body();
      } else if (kind == '#') {
        lex_comment(p + 2 + (sign ? 1 : 0));
      } else {
        lex_tag(kind == '%', p + 2 + (sign ? 1 : 0));
      }
    }
    tokens_.push_back(Token{TokenType::Eof, "", line_});
    return std::move(tokens_);
  }

 private:
  std::string src_;
  LexerOptions opt_;
  size_t pos_ = 0;
  int line_ = 1;
  std::vector<Token> tokens_;

  void advance_to(size_t p) {
    for (size_t i = pos_; i < p; ++i) line_ += src_[i] == '\n';
    pos_ = p;
  }

  size_t find_tag_start(size_t from) const {
    for (size_t p = src_.find('{', from); p != std::string::npos; p = src_.find('{', p + 1)) {
      if (p + 1 < src_.size() && (src_[p + 1] == '{' || src_[p + 1] == '%' || src_[p + 1] == '#')) return p;
    }
    return std::string::npos;
  }

  void emit_data(const std::string& text, int line) {
    if (!text.empty()) tokens_.push_back(Token{TokenType::Data, text, line});
  }

  // `-` strips all whitespace before a tag; lstrip_blocks strips the indentation of a block or
  // comment tag that starts its line (unless the tag says `+`).
  void strip_before_tag(std::string& text, char sign, bool is_block_or_comment, bool line_starting) const {
    if (sign == '-') {
      text = std::string(utf8::strip(text, false, true));
    } else if (sign != '+' && opt_.lstrip_blocks && is_block_or_comment) {
      size_t nl = text.rfind('\n');
      size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
      if (l_pos > 0 || line_starting) {
        std::string_view tail = std::string_view(text).substr(l_pos);
        if (!tail.empty() && utf8::strip(tail).empty()) text.resize(l_pos);
      }
    }
  }

  // After a block/comment end: `-` eats following whitespace, trim_blocks eats one newline.
  size_t after_end(size_t end, char sign, bool trims) const {
    if (sign == '-') return end + whitespace_run(src_, end);
    if (sign == '+' || !trims) return end;
    if (opt_.trim_blocks && end < src_.size() && src_[end] == '\n') return end + 1;
    return end;
  }

  // Matches `{%[-+]?\s*NAME\s*(-%}\s*|+%}|%})` at p; returns the position after the tag or npos.
  // `end_sign` receives '-', '+' or 0.
  size_t match_named_tag(size_t p, std::string_view name, char* end_sign) const {
    size_t i = p + 2;
    if (i < src_.size() && (src_[i] == '-' || src_[i] == '+')) ++i;
    i += whitespace_run(src_, i);
    if (src_.compare(i, name.size(), name) != 0) return std::string::npos;
    i += name.size();
    if (i < src_.size() && is_name_char(src_[i])) return std::string::npos;
    i += whitespace_run(src_, i);
    *end_sign = 0;
    if (i < src_.size() && (src_[i] == '-' || src_[i] == '+')) *end_sign = src_[i++];
    if (src_.compare(i, 2, "%}") != 0) return std::string::npos;
    return i + 2;
  }

  size_t match_raw_begin(size_t p) const {
    char end_sign;
    size_t end = match_named_tag(p, "raw", &end_sign);
    if (end == std::string::npos || end_sign == '+') return std::string::npos;
    return end_sign == '-' ? end + whitespace_run(src_, end) : end;  // no trim_blocks after raw
  }

  void lex_raw_body() {
    int start_line = line_;
    for (size_t p = src_.find("{%", pos_); p != std::string::npos; p = src_.find("{%", p + 1)) {
      char end_sign;
      size_t end = match_named_tag(p, "endraw", &end_sign);
      if (end == std::string::npos) continue;
      char sign = (src_[p + 2] == '-' || src_[p + 2] == '+') ? src_[p + 2] : 0;
      std::string text = src_.substr(pos_, p - pos_);
      bool line_starting = pos_ == 0 || src_[pos_ - 1] == '\n';
      strip_before_tag(text, sign, true, line_starting);
      emit_data(text, line_);
      advance_to(after_end(end, end_sign, true));
      return;
    }
    fail(start_line, "Missing end of raw directive");
  }

  void lex_comment(size_t content_start) {
    size_t q = src_.find("#}", content_start);
    if (q == std::string::npos) fail(line_, "Missing end of comment tag");
    char sign = 0;
    if (q > content_start && (src_[q - 1] == '-' || src_[q - 1] == '+')) sign = src_[q - 1];
    advance_to(after_end(q + 2, sign, true));
  }

  void lex_tag(bool block, size_t start) {
    tokens_.push_back(Token{block ? TokenType::BlockBegin : TokenType::VariableBegin, "", line_});
    advance_to(start);
    std::string balance;  // expected closing brackets
    while (pos_ < src_.size()) {
      if (balance.empty() && lex_tag_end(block)) return;
      size_t ws = whitespace_run(src_, pos_);
      if (ws) {
        advance_to(pos_ + ws);
        continue;
      }
      if (lex_number() || lex_name() || lex_string()) continue;
      lex_operator(balance);
    }
    // End of input inside a tag: the parser reports "unexpected end of template".
  }

  bool lex_tag_end(bool block) {
    std::string_view rest = std::string_view(src_).substr(pos_);
    const char* close = block ? "%}" : "}}";
    char sign = 0;
    size_t len;
    if (rest.size() >= 3 && rest[0] == '-' && rest.substr(1, 2) == close) {
      sign = '-';
      len = 3;
    } else if (block && rest.size() >= 3 && rest[0] == '+' && rest.substr(1, 2) == close) {
      sign = '+';
      len = 3;
    } else if (rest.substr(0, 2) == close) {
      len = 2;
    } else {
      return false;
    }
    tokens_.push_back(Token{block ? TokenType::BlockEnd : TokenType::VariableEnd, "", line_});
    advance_to(after_end(pos_ + len, sign, block));
    return true;
  }

  bool lex_number() {
    std::string_view s = src_;
    size_t p = pos_;
    if (!is_digit(s[p])) return false;
    // float: (?<!\.)(\d+_)*\d+((\.(\d+_)*\d+)?e[+\-]?(\d+_)*\d+|\.(\d+_)*\d+)
    if (p == 0 || s[p - 1] != '.') {
      size_t i = digit_run(s, p);
      size_t frac_end = std::string_view::npos;
      if (i < s.size() && s[i] == '.') frac_end = digit_run(s, i + 1);
      size_t mant_end = frac_end != std::string_view::npos ? frac_end : i;
      size_t exp_end = std::string_view::npos;
      if (mant_end < s.size() && (s[mant_end] == 'e' || s[mant_end] == 'E')) {
        size_t e = mant_end + 1;
        if (e < s.size() && (s[e] == '+' || s[e] == '-')) ++e;
        exp_end = digit_run(s, e);
      }
      size_t end = exp_end != std::string_view::npos ? exp_end : frac_end;
      if (end != std::string_view::npos) {
        std::string text = without_underscores(s.substr(p, end - p));
        Token t{TokenType::Float, text, line_};
        t.float_value = std::strtod(text.c_str(), nullptr);
        tokens_.push_back(t);
        advance_to(end);
        return true;
      }
    }
    // integer: 0b.., 0o.., 0x.., [1-9](_?\d)*, 0(_?0)*
    int base = 10;
    size_t i = p;
    if (s[p] == '0' && p + 1 < s.size()) {
      char b = static_cast<char>(s[p + 1] | 0x20);
      base = b == 'b' ? 2 : b == 'o' ? 8 : b == 'x' ? 16 : 10;
    }
    auto digit_ok = [&](char c) {
      if (base == 16) return is_digit(c) || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f');
      if (base == 10) return is_digit(c);
      return c >= '0' && c < '0' + base;
    };
    if (base != 10) {
      i = p + 2;
      size_t digits = 0;
      while (i < s.size()) {
        if (s[i] == '_' && i + 1 < s.size() && digit_ok(s[i + 1])) ++i;
        if (!digit_ok(s[i])) break;
        ++i;
        ++digits;
      }
      if (digits == 0) base = 10, i = p;  // just "0" followed by a name
    }
    if (base == 10) {
      i = p + 1;
      while (i < s.size()) {
        size_t j = i + (s[i] == '_' ? 1 : 0);
        if (j >= s.size() || !is_digit(s[j]) || (s[p] == '0' && s[j] != '0')) break;
        i = j + 1;
      }
    }
    std::string text = without_underscores(s.substr(base == 10 ? p : p + 2, i - (base == 10 ? p : p + 2)));
    Token t{TokenType::Integer, std::string(s.substr(p, i - p)), line_};
    errno = 0;
    unsigned long long v = std::strtoull(text.c_str(), nullptr, base);
    if (errno == ERANGE || v > static_cast<unsigned long long>(INT64_MAX))
      fail(line_, "integer literal too large: " + t.value);
    t.int_value = static_cast<int64_t>(v);
    tokens_.push_back(t);
    advance_to(i);
    return true;
  }

  bool lex_name() {
    if (!is_name_start(src_[pos_])) return false;
    size_t i = pos_;
    while (i < src_.size() && is_name_char(src_[i])) ++i;
    tokens_.push_back(Token{TokenType::Name, src_.substr(pos_, i - pos_), line_});
    advance_to(i);
    return true;
  }

  bool lex_string() {
    char q = src_[pos_];
    if (q != '\'' && q != '"') return false;
    size_t i = pos_ + 1;
    while (i < src_.size() && src_[i] != q) i += src_[i] == '\\' ? 2 : 1;
    if (i >= src_.size()) fail(line_, std::string("unexpected char '") + q + "'");
    Token t{TokenType::String, "", line_};
    t.value = decode_string_literal(std::string_view(src_).substr(pos_ + 1, i - pos_ - 1), line_);
    tokens_.push_back(std::move(t));
    advance_to(i + 1);
    return true;
  }

  void lex_operator(std::string& balance) {
    static const char* const two[] = {"**", "//", "==", "!=", ">=", "<="};
    std::string_view rest = std::string_view(src_).substr(pos_);
    for (const char* op : two) {
      if (rest.substr(0, 2) == op) {
        tokens_.push_back(Token{TokenType::Operator, op, line_});
        advance_to(pos_ + 2);
        return;
      }
    }
    char c = rest[0];
    static const std::string_view singles = "+-/*%~[](){}><=.:|,;";
    if (singles.find(c) == std::string_view::npos) {
      fail(line_, std::string("unexpected char ") + (c == '\'' ? "\"'\"" : std::string("'") + c + "'"));
    }
    if (c == '(' || c == '[' || c == '{') {
      balance.push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
    } else if (c == ')' || c == ']' || c == '}') {
      if (balance.empty()) fail(line_, std::string("unexpected '") + c + "'");
      if (balance.back() != c)
        fail(line_, std::string("unexpected '") + c + "', expected '" + balance.back() + "'");
      balance.pop_back();
    }
    tokens_.push_back(Token{TokenType::Operator, std::string(1, c), line_});
    advance_to(pos_ + 1);
  }
};

}  // namespace

std::vector<Token> tokenize(std::string_view source, const LexerOptions& opt) {
  // Like jinja2: every \r\n, \r and \n becomes \n, and one trailing newline is dropped.
  std::string src;
  src.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      src += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      src += source[i];
    }
  }
  if (!opt.keep_trailing_newline && !src.empty() && src.back() == '\n') src.pop_back();
  return Lexer(std::move(src), opt).run();
}

std::string describe(const Token& t) {
  switch (t.type) {
    case TokenType::Data: return "template data";
    case TokenType::VariableBegin: return "begin of print statement";
    case TokenType::VariableEnd: return "end of print statement";
    case TokenType::BlockBegin: return "begin of statement block";
    case TokenType::BlockEnd: return "end of statement block";
    case TokenType::Eof: return "end of template";
    case TokenType::String: return "string";
    case TokenType::Integer: return "integer";
    case TokenType::Float: return "float";
    default: return t.value;
  }
}

}  // namespace gs::jinja
