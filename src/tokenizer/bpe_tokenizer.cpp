#include "tokenizer/bpe_tokenizer.h"

#include <algorithm>

#include "core/error.h"

namespace gs {

BpeTokenizer::BpeTokenizer(TokenizerParts parts) : p_(std::move(parts)) {
  GS_CHECK(p_.model != nullptr, "{}: tokenizer has no model", p_.source);
  vocab_size_ = p_.model->size();
  for (const auto& t : p_.added_tokens) {
    // Added tokens extend the model's ids; a huge stray id must not allocate gigabytes.
    GS_CHECK(t.id >= 0 && t.id < p_.model->size() + (1 << 16),
             "{}: added token '{}' has id {}, far beyond the {} ids of the model", p_.source, t.content, t.id,
             p_.model->size());
    vocab_size_ = std::max(vocab_size_, t.id + 1);
  }
  added_by_id_.assign(static_cast<size_t>(vocab_size_), nullptr);
  std::vector<const AddedToken*> raw, norm;
  std::vector<std::string> raw_patterns, norm_patterns;
  for (const auto& t : p_.added_tokens) {
    added_by_id_[static_cast<size_t>(t.id)] = &t;
    added_by_content_.emplace(t.content, t.id);
    if (t.normalized) {
      norm.push_back(&t);
      norm_patterns.push_back(p_.normalizer.apply(t.content));
    } else {
      raw.push_back(&t);
      raw_patterns.push_back(t.content);
    }
  }
  raw_matcher_ = AddedTokenMatcher(raw, raw_patterns);
  normalized_matcher_ = AddedTokenMatcher(norm, norm_patterns);
  GS_CHECK(p_.bos_id >= -1 && p_.bos_id < vocab_size_ && p_.eos_id >= -1 && p_.eos_id < vocab_size_,
           "{}: BOS id {} or EOS id {} is outside the vocabulary", p_.source, p_.bos_id, p_.eos_id);
}

std::vector<int> BpeTokenizer::encode(std::string_view text, bool add_bos) const {
  std::vector<int> out;
  out.reserve(text.size() / 3 + 2);
  if (add_bos && p_.bos_id >= 0) out.push_back(p_.bos_id);
  for (const auto& piece : raw_matcher_.split(text)) {
    if (piece.id >= 0) {
      out.push_back(piece.id);
      continue;
    }
    const std::string normalized = p_.normalizer.apply(text.substr(piece.begin, piece.end - piece.begin));
    if (normalized_matcher_.empty()) {
      encode_plain(normalized, out);
      continue;
    }
    for (const auto& sub : normalized_matcher_.split(normalized)) {
      if (sub.id >= 0) out.push_back(sub.id);
      else encode_plain(std::string_view(normalized).substr(sub.begin, sub.end - sub.begin), out);
    }
  }
  return out;
}

void BpeTokenizer::encode_plain(std::string_view text, std::vector<int>& out) const {
  for (const auto& [b, e] : p_.pre_tokenizer.words(text)) p_.model->encode_word(text.substr(b, e - b), out);
}

std::string BpeTokenizer::decode(const std::vector<int>& ids, bool skip_special) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int id : ids) {
    if (id < 0 || id >= vocab_size_) continue;  // ids outside the vocabulary decode to nothing
    if (skip_special && is_special(id)) continue;
    tokens.emplace_back(token_text(id));
  }
  return p_.decoder.decode(std::move(tokens));
}

std::optional<int> BpeTokenizer::token_id(std::string_view token) const {
  auto it = added_by_content_.find(std::string(token));
  if (it != added_by_content_.end()) return it->second;
  return p_.model->token_to_id(token);
}

std::string_view BpeTokenizer::token_text(int id) const {
  if (id < 0 || id >= vocab_size_) return {};
  if (const AddedToken* t = added_by_id_[static_cast<size_t>(id)]) return t->content;
  if (id < p_.model->size()) return p_.model->id_to_token(id);
  return {};
}

bool BpeTokenizer::is_special(int id) const {
  if (id < 0 || id >= vocab_size_) return false;
  const AddedToken* t = added_by_id_[static_cast<size_t>(id)];
  return t != nullptr && t->special;
}

}  // namespace gs
