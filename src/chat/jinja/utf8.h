// UTF-8 helpers for the Jinja interpreter. Python strings are sequences of code points, so
// len(), indexing, slicing and case mapping work on decoded code points; everything else passes
// bytes through untouched.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace gs::jinja::utf8 {

// Decodes UTF-8; an invalid byte decodes as U+FFFD (inputs from JSON are always valid).
std::u32string decode(std::string_view s);
void append(std::string& out, char32_t cp);
std::string encode(std::u32string_view cps);
size_t length(std::string_view s);  // number of code points

// Python's str.isspace() for one code point.
bool is_space(char32_t cp);
// Python str.strip()/lstrip()/rstrip() without arguments (Unicode whitespace).
std::string_view strip(std::string_view s, bool left = true, bool right = true);
// Strips any code point of `chars` (Python str.strip(chars)).
std::string strip_chars(std::string_view s, std::string_view chars, bool left = true, bool right = true);

// Simple (one-to-one) case mappings for ASCII, Latin-1, Latin Extended-A, Greek and Cyrillic,
// plus Python's special case of U+00DF for upper() (-> "SS").
char32_t to_lower(char32_t cp);
char32_t to_upper(char32_t cp);
std::string lower(std::string_view s);
std::string upper(std::string_view s);
bool is_cased_lower(char32_t cp);
bool is_cased_upper(char32_t cp);
bool is_alpha(char32_t cp);
bool is_digit(char32_t cp);

// Python's str.isprintable() for one code point (approximation of the Unicode tables that is
// exact for ASCII, Latin-1 and the usual separators and format characters).
bool is_printable(char32_t cp);

}  // namespace gs::jinja::utf8
