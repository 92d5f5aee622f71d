// A small, fully known vocabulary for API tests: the Gemma-4 structural special tokens, single
// printable ASCII characters, a few words and one two-byte character, so tests can write token
// sequences by hand and know exactly what text they decode to.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace gs::testing {

class FakeTokenizer : public Tokenizer {
 public:
  FakeTokenizer() {
    for (const char* s : {"<pad>", "<eos>", "<bos>", "<|channel>", "<channel|>", "<|tool_call>", "<tool_call|>",
                          "<|\"|>", "<|turn>", "<turn|>"}) {
      add(s, true);
    }
    for (int c = 32; c < 127; ++c) add(std::string(1, static_cast<char>(c)), false);
    add("\n", false);
    for (const char* s : {"thought", "Hello", " world", "call:", "get_weather", "\xC3\xA9"}) add(s, false);
    // Last, so the ids above stay what tests wrote them as.
    for (const char* s : {"<|image|>", "<|image>", "<image|>"}) add(s, true);
  }

  std::vector<int> encode(std::string_view text, bool add_bos) const override {
    std::vector<int> ids;
    if (add_bos) ids.push_back(2);
    size_t i = 0;
    while (i < text.size()) {
      int best = -1;
      size_t best_len = 0;
      for (size_t id = 0; id < vocab_.size(); ++id) {
        const std::string& v = vocab_[id];
        if (v.size() > best_len && text.substr(i, v.size()) == v) best = static_cast<int>(id), best_len = v.size();
      }
      if (best < 0) {  // unknown byte: skip (the fake has no byte fallback)
        ++i;
        continue;
      }
      ids.push_back(best);
      i += best_len;
    }
    return ids;
  }
  std::string decode(const std::vector<int>& ids, bool skip_special) const override {
    std::string s;
    for (int id : ids) {
      if (id < 0 || id >= vocab_size()) continue;
      if (skip_special && special_[id]) continue;
      s += vocab_[id];
    }
    return s;
  }
  int vocab_size() const override { return static_cast<int>(vocab_.size()); }
  std::optional<int> token_id(std::string_view token) const override {
    auto it = ids_.find(std::string(token));
    if (it == ids_.end()) return std::nullopt;
    return it->second;
  }
  std::string_view token_text(int id) const override { return vocab_.at(id); }
  bool is_special(int id) const override { return special_.at(id); }
  int bos_id() const override { return 2; }
  int eos_id() const override { return 1; }
  bool add_bos_default() const override { return true; }

  int id(const std::string& s) const { return ids_.at(s); }
  // Token ids of plain text (no special tokens).
  std::vector<int> ids(std::string_view text) const { return encode(text, false); }

 private:
  void add(const std::string& s, bool special) {
    ids_[s] = static_cast<int>(vocab_.size());
    vocab_.push_back(s);
    special_.push_back(special);
  }
  std::vector<std::string> vocab_;
  std::vector<bool> special_;
  std::map<std::string, int> ids_;
};

}  // namespace gs::testing
