#include "chat/jinja/string_literal.h"

#include <cstdio>

#include "chat/jinja/utf8.h"
#include "core/error.h"

namespace gs::jinja {

static int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  c = static_cast<char>(c | 0x20);
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

std::string decode_string_literal(std::string_view body, int line) {
  auto fail = [&](const char* what) -> void {
    throw Error("template syntax error (line {}): (unicode error) 'unicodeescape' codec can't decode: {}", line,
                what);
  };
  // Step 1: non-ASCII characters become \xNN, \uNNNN or \UNNNNNNNN (backslashreplace).
  std::string ascii;
  ascii.reserve(body.size());
  for (char32_t c : utf8::decode(body)) {
    if (c < 0x80) {
      ascii += static_cast<char>(c);
      continue;
    }
    char buf[16];
    if (c < 0x100)
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(c));
    else if (c < 0x10000)
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
    else
      std::snprintf(buf, sizeof buf, "\\U%08x", static_cast<unsigned>(c));
    ascii += buf;
  }
  // Step 2: Python's unicode-escape decoding.
  std::string out;
  out.reserve(ascii.size());
  auto put = [&](char32_t cp) { utf8::append(out, (cp >= 0xD800 && cp <= 0xDFFF) ? 0xFFFD : cp); };
  for (size_t i = 0; i < ascii.size(); ++i) {
    char c = ascii[i];
    if (c != '\\') {
      out += c;
      continue;
    }
    if (++i >= ascii.size()) fail("\\ at end of string");
    char e = ascii[i];
    switch (e) {
      case '\n': break;
      case '\\': out += '\\'; break;
      case '\'': out += '\''; break;
      case '"': out += '"'; break;
      case 'a': out += '\a'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'v': out += '\v'; break;
      case 'x':
      case 'u':
      case 'U': {
        int n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
        char32_t cp = 0;
        for (int k = 0; k < n; ++k) {
          int h = i + 1 < ascii.size() ? hex_value(ascii[i + 1]) : -1;
          if (h < 0) fail(e == 'x' ? "truncated \\xXX escape" : e == 'u' ? "truncated \\uXXXX escape"
                                                                           : "truncated \\UXXXXXXXX escape");
          cp = cp * 16 + static_cast<char32_t>(h);
          ++i;
        }
        if (cp > 0x10FFFF) fail("illegal Unicode character");
        put(cp);
        break;
      }
      case 'N': fail("named Unicode escapes (\\N{...}) are not supported"); break;
      default:
        if (e >= '0' && e <= '7') {
          char32_t cp = static_cast<char32_t>(e - '0');
          for (int k = 0; k < 2 && i + 1 < ascii.size() && ascii[i + 1] >= '0' && ascii[i + 1] <= '7'; ++k)
            cp = cp * 8 + static_cast<char32_t>(ascii[++i] - '0');
          put(cp);
        } else {
          out += '\\';
          out += e;
        }
    }
  }
  return out;
}

}  // namespace gs::jinja
