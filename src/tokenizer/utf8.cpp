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
  // Blocks made (almost) only of punctuation and symbols; everything else outside ASCII is
  // treated as letters, digits or marks.
  struct Range {
    uint32_t lo, hi;
  };
  static constexpr Range kNonWord[] = {
      {0x80, 0xA9},     {0xAB, 0xB1},     {0xB4, 0xB4},     {0xB6, 0xB8},     {0xBB, 0xBF},
      {0xD7, 0xD7},     {0xF7, 0xF7},     {0x2000, 0x206F}, {0x20A0, 0x20CF}, {0x2100, 0x214F},
      {0x2190, 0x23FF}, {0x2400, 0x245F}, {0x2500, 0x27BF}, {0x27C0, 0x2BFF}, {0x2E00, 0x2E7F},
      {0x3000, 0x3004}, {0x3008, 0x3020}, {0xE000, 0xF8FF}, {0xFE10, 0xFE1F}, {0xFE30, 0xFE6F},
      {0xFF00, 0xFF0F}, {0xFF1A, 0xFF20}, {0xFF3B, 0xFF40}, {0xFF5B, 0xFF65}, {0xFFF0, 0xFFFF},
      {0x1F000, 0x1FAFF},
  };
  for (const Range& r : kNonWord) {
    if (cp >= r.lo && cp <= r.hi) return false;
  }
  return true;
}

}  // namespace gs::utf8
