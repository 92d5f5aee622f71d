// The BPE model of a tokenizer: vocabulary, ranked merges, byte fallback and the unknown token,
// with the merge order of the Hugging Face `tokenizers` BPE (lowest rank first, leftmost first).
#pragma once
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "tokenizer/flat_maps.h"

namespace gs {

class BpeModel {
 public:
  struct Options {
    std::string unk_token;       // empty: none
    bool fuse_unk = false;       // consecutive unknown characters become one unknown token
    bool byte_fallback = false;  // unknown characters become <0xXX> byte tokens when those exist
    bool ignore_merges = false;  // a word that is itself a vocabulary token is not merged
  };

  // id_to_token[i] is the token of id i; an empty string marks an id the model does not define.
  // `source` names the file in error messages.
  BpeModel(std::vector<std::string> id_to_token, Options options, std::string source);

  // Appends the merge of `left` and `right` with the next rank. Throws gs::Error naming `index`
  // when a part or the merged token is not in the vocabulary.
  void add_merge(std::string_view left, std::string_view right, size_t index);
  void reserve_merges(size_t n) {
    merges_.reserve(n);
    crossable_.reserve(n / 4);
  }

  // Appends the ids of one pre-tokenized word.
  void encode_word(std::string_view word, std::vector<int>& out) const;

  std::optional<int> token_to_id(std::string_view token) const;
  const std::string& id_to_token(int id) const { return id_to_token_[static_cast<size_t>(id)]; }
  int size() const { return static_cast<int>(id_to_token_.size()); }
  size_t merge_count() const { return merges_.size(); }
  int byte_token(uint8_t b) const { return byte_tokens_[b]; }  // -1 when absent
  const Options& options() const { return options_; }

 private:
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  // First and last code point of the symbols a character starts as ('<' and '>' for byte
  // fallback tokens); `unknown` for characters that become the unknown token or vanish.
  struct CharEdges {
    uint32_t first = 0;
    uint32_t last = 0;
    bool unknown = false;
  };
  CharEdges edges(std::string_view ch) const;
  void encode_piece(std::string_view piece, std::vector<int>& out) const;  // cached merge_word
  void merge_word(std::string_view word, std::vector<int>& out) const;

  std::vector<std::string> id_to_token_;
  TokenIndex token_to_id_;  // over id_to_token_
  MergeMap merges_;
  // (last code point of a merge's left token, first code point of its right token) of every
  // merge: the only character boundaries a merge can join across.
  std::unordered_set<uint64_t> crossable_;
  Options options_;
  std::string source_;
  int unk_id_ = -1;
  int byte_tokens_[256];

  // Words seen before (short ones only); the model is shared between threads.
  mutable std::mutex cache_mu_;
  mutable std::unordered_map<std::string, std::vector<int>, StringHash, std::equal_to<>> cache_;
};

}  // namespace gs
