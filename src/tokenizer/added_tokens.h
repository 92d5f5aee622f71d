// Added tokens (special and not): found in the text before the BPE model runs, longest match
// first at the leftmost position, with the lstrip/rstrip/single_word rules of Hugging Face
// `tokenizers`.
#pragma once
#include <array>
#include <string>
#include <string_view>
#include <vector>

namespace gs {

struct AddedToken {
  std::string content;
  int id = -1;
  bool special = false;
  bool lstrip = false;       // the match swallows whitespace on its left
  bool rstrip = false;       // the match swallows whitespace on its right
  bool single_word = false;  // matches only when not inside a word
  bool normalized = false;   // matched in the normalized text instead of the raw text
};

class AddedTokenMatcher {
 public:
  struct Piece {
    int id;  // the added token's id, or -1 for text between matches
    size_t begin;
    size_t end;
  };

  AddedTokenMatcher() = default;
  // `patterns[i]` is the text to find for `tokens[i]` (the normalized content for normalized ones).
  AddedTokenMatcher(const std::vector<const AddedToken*>& tokens, const std::vector<std::string>& patterns);

  bool empty() const { return tokens_.empty(); }
  // Splits `text` into added-token matches and the plain text between them (in order, covering
  // the whole text except whitespace swallowed by lstrip/rstrip).
  std::vector<Piece> split(std::string_view text) const;

 private:
  struct Node {
    std::vector<std::pair<unsigned char, int>> children;  // sorted by byte
    int token = -1;                                       // index into tokens_
  };
  int child(int node, unsigned char c) const;
  // Longest pattern starting at `pos`: returns token index and sets *end, or -1.
  int longest_at(std::string_view text, size_t pos, size_t* end) const;

  std::vector<Node> nodes_;
  std::array<bool, 256> first_byte_{};
  std::vector<const AddedToken*> tokens_;
};

}  // namespace gs
