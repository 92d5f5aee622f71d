// UTF-8 helpers shared by the tokenizer pieces. Invalid input never throws: a byte that does not
// start a well-formed sequence is treated as a one-byte "character" so it can still fall back to
// a <0xXX> byte token.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace gs::utf8 {

// Length of the well-formed UTF-8 sequence starting at s[i] (1..4), or 1 when the bytes there
// are not a well-formed sequence (stray continuation byte, overlong form, surrogate, truncated).
size_t char_len(std::string_view s, size_t i);

// True when the sequence at s[i] is a well-formed character (not a lone invalid byte).
bool is_valid_char_at(std::string_view s, size_t i);

// Decodes the character at s[i]; invalid bytes decode to U+FFFD. Sets *len to the bytes used.
uint32_t decode(std::string_view s, size_t i, size_t* len);

void append(std::string& out, uint32_t cp);

bool is_valid(std::string_view s);

// Unicode White_Space property (what Rust's char::is_whitespace tests).
bool is_whitespace(uint32_t cp);

// Approximation of the Unicode regex \w class (letters, marks, digits, '_'): exact for ASCII;
// beyond it, code points in punctuation/symbol/emoji blocks are non-word, all others word.
bool is_word_char(uint32_t cp);

}  // namespace gs::utf8
