// A complete tokenizer: added tokens, normalizer, pre-tokenizer, BPE model and decoder wired the
// way Hugging Face `tokenizers` runs them. Built by the tokenizer.json and GGUF loaders.
#pragma once
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe_model.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/token_decoder.h"
#include "tokenizer/tokenizer.h"

namespace gs {

struct TokenizerParts {
  std::string source;  // file the tokenizer came from, for messages
  std::unique_ptr<BpeModel> model;
  std::vector<AddedToken> added_tokens;
  Normalizer normalizer;
  PreTokenizer pre_tokenizer;
  TokenDecoder decoder;
  int bos_id = -1;
  int eos_id = -1;
  bool add_bos = false;
};

class BpeTokenizer final : public Tokenizer {
 public:
  explicit BpeTokenizer(TokenizerParts parts);
  // Holds pointers into its own parts: never copied or moved.
  BpeTokenizer(const BpeTokenizer&) = delete;
  BpeTokenizer& operator=(const BpeTokenizer&) = delete;

  std::vector<int> encode(std::string_view text, bool add_bos = false) const override;
  std::string decode(const std::vector<int>& ids, bool skip_special = false) const override;
  int vocab_size() const override { return vocab_size_; }
  std::optional<int> token_id(std::string_view token) const override;
  std::string_view token_text(int id) const override;
  bool is_special(int id) const override;
  int bos_id() const override { return p_.bos_id; }
  int eos_id() const override { return p_.eos_id; }
  bool add_bos_default() const override { return p_.add_bos; }

 private:
  void encode_plain(std::string_view text, std::vector<int>& out) const;

  TokenizerParts p_;
  int vocab_size_ = 0;
  std::vector<const AddedToken*> added_by_id_;  // indexed by id; null where not an added token
  std::unordered_map<std::string, int> added_by_content_;
  AddedTokenMatcher raw_matcher_;               // added tokens found in the raw text
  AddedTokenMatcher normalized_matcher_;        // added tokens found after normalization
};

}  // namespace gs
