#include "tokenizer/added_tokens.h"

#include <algorithm>

#include "tokenizer/utf8.h"

namespace gs {

AddedTokenMatcher::AddedTokenMatcher(const std::vector<const AddedToken*>& tokens,
                                     const std::vector<std::string>& patterns)
    : tokens_(tokens) {
  nodes_.emplace_back();
  for (size_t t = 0; t < tokens.size(); ++t) {
    const std::string& p = patterns[t];
    if (p.empty()) continue;
    int node = 0;
    for (unsigned char c : p) {
      int next = child(node, c);
      if (next < 0) {
        next = static_cast<int>(nodes_.size());
        auto& ch = nodes_[static_cast<size_t>(node)].children;
        ch.insert(std::lower_bound(ch.begin(), ch.end(), std::make_pair(c, 0)), {c, next});
        nodes_.emplace_back();
      }
      node = next;
    }
    // The first token with a given content keeps it.
    if (nodes_[static_cast<size_t>(node)].token < 0) nodes_[static_cast<size_t>(node)].token = static_cast<int>(t);
    first_byte_[static_cast<unsigned char>(p[0])] = true;
  }
}

int AddedTokenMatcher::child(int node, unsigned char c) const {
  const auto& ch = nodes_[static_cast<size_t>(node)].children;
  auto it = std::lower_bound(ch.begin(), ch.end(), std::make_pair(c, 0));
  return (it != ch.end() && it->first == c) ? it->second : -1;
}

int AddedTokenMatcher::longest_at(std::string_view text, size_t pos, size_t* end) const {
  int node = 0;
  int best = -1;
  for (size_t i = pos; i < text.size(); ++i) {
    node = child(node, static_cast<unsigned char>(text[i]));
    if (node < 0) break;
    if (nodes_[static_cast<size_t>(node)].token >= 0) {
      best = nodes_[static_cast<size_t>(node)].token;
      *end = i + 1;
    }
  }
  return best;
}

namespace {
// Code point that ends just before `pos` (pos > 0).
uint32_t cp_before(std::string_view s, size_t pos) {
  size_t start = pos - 1;
  while (start > 0 && pos - start < 4 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
  size_t len = 0;
  uint32_t cp = utf8::decode(s, start, &len);
  return start + len == pos ? cp : 0xFFFD;
}
}  // namespace

std::vector<AddedTokenMatcher::Piece> AddedTokenMatcher::split(std::string_view text) const {
  std::vector<Piece> pieces;
  size_t done = 0;  // end of the last piece emitted
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = 0;
    int t = first_byte_[static_cast<unsigned char>(text[pos])] ? longest_at(text, pos, &end) : -1;
    if (t < 0) {
      ++pos;
      continue;
    }
    const AddedToken& tok = *tokens_[static_cast<size_t>(t)];
    size_t start = pos;
    size_t stop = end;
    if (tok.single_word) {
      size_t len = 0;
      const bool word_before = start > 0 && utf8::is_word_char(cp_before(text, start));
      const bool word_after = stop < text.size() && utf8::is_word_char(utf8::decode(text, stop, &len));
      if (word_before || word_after) {
        // Not a match here; the reference resumes its search after this match.
        pos = end;
        continue;
      }
    }
    if (tok.lstrip) {
      // Swallow whitespace on the left, never reaching back into the previous piece.
      while (start > done) {
        size_t s = start - 1;
        while (s > done && (static_cast<unsigned char>(text[s]) & 0xC0) == 0x80) --s;
        size_t len = 0;
        const uint32_t cp = utf8::decode(text, s, &len);
        if (s + len != start || !utf8::is_whitespace(cp)) break;
        start = s;
      }
    }
    if (tok.rstrip) {
      while (stop < text.size()) {
        size_t len = 0;
        const uint32_t cp = utf8::decode(text, stop, &len);
        if (!utf8::is_whitespace(cp)) break;
        stop += len;
      }
    }
    if (done < start) pieces.push_back(Piece{-1, done, start});
    pieces.push_back(Piece{tok.id, start, stop});
    done = stop;
    pos = stop;
  }
  if (done < text.size()) pieces.push_back(Piece{-1, done, text.size()});
  return pieces;
}

}  // namespace gs
