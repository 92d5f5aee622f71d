#include "tokenizer/utf8.h"

namespace gs::utf8 {

namespace {
inline bool is_cont(unsigned char c) { return (c & 0xC0) == 0x80; }
}  // namespace

size_t char_len(std::string_view s, size_t i) {
  const size_t n = s.size() - i;
  const auto c0 = static_cast<unsigned char>(s[i]);
  if (c0 < 0x80) return 1;
  if (c0 >= 0xC2 && c0 <= 0xDF) return (n >= 2 && is_cont(s[i + 1])) ? 2 : 1;
  if (c0 >= 0xE0 && c0 <= 0xEF) {
    if (n < 3) return 1;
    const auto c1 = static_cast<unsigned char>(s[i + 1]);
    if (!is_cont(c1) || !is_cont(s[i + 2])) return 1;
    if (c0 == 0xE0 && c1 < 0xA0) return 1;   // overlong
    if (c0 == 0xED && c1 >= 0xA0) return 1;  // UTF-16 surrogate
    return 3;
  }
  if (c0 >= 0xF0 && c0 <= 0xF4) {
    if (n < 4) return 1;
    const auto c1 = static_cast<unsigned char>(s[i + 1]);
    if (!is_cont(c1) || !is_cont(s[i + 2]) || !is_cont(s[i + 3])) return 1;
    if (c0 == 0xF0 && c1 < 0x90) return 1;   // overlong
    if (c0 == 0xF4 && c1 >= 0x90) return 1;  // beyond U+10FFFF
    return 4;
  }
  return 1;
}

bool is_valid_char_at(std::string_view s, size_t i) {
  return static_cast<unsigned char>(s[i]) < 0x80 || char_len(s, i) > 1;
}

uint32_t decode(std::string_view s, size_t i, size_t* len) {
  const size_t l = char_len(s, i);
  *len = l;
  const auto b = [&](size_t k) { return static_cast<uint32_t>(static_cast<unsigned char>(s[i + k])); };
  switch (l) {
    case 2: return ((b(0) & 0x1F) << 6) | (b(1) & 0x3F);
    case 3: return ((b(0) & 0x0F) << 12) | ((b(1) & 0x3F) << 6) | (b(2) & 0x3F);
    case 4: return ((b(0) & 0x07) << 18) | ((b(1) & 0x3F) << 12) | ((b(2) & 0x3F) << 6) | (b(3) & 0x3F);
    default: return b(0) < 0x80 ? b(0) : 0xFFFD;
  }
}

void append(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

bool is_valid(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    if (!is_valid_char_at(s, i)) return false;
    i += char_len(s, i);
  }
  return true;
}

bool is_whitespace(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
         cp == 0x205F || cp == 0x3000;
}

bool is_word_char(uint32_t cp) {
  if (cp < 0x80) {
    return (cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') || cp == '_';
  }
  if (is_whitespace(cp)) return false;
  if (cp >= 0x80 && cp <= 0xBF) return cp == 0xAA || cp == 0xB2 || cp == 0xB3 || cp == 0xB5 || cp == 0xB9 || cp == 0xBA;
  if (cp == 0xD7 || cp == 0xF7) return false;
  if (cp >= 0x2000 && cp <= 0x206F) return false;  // general punctuation
  if (cp >= 0x3000 && cp <= 0x303F) return false;  // CJK symbols and punctuation
  if (cp >= 0xFF00 && cp <= 0xFF0F) return false;  // fullwidth punctuation
  return true;
}

}  // namespace gs::utf8
