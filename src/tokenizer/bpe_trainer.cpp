#include "tokenizer/bpe_trainer.h"

#include <map>

#include "tokenizer/utf8.h"

namespace gs {

BpeTrainingResult train_bpe(const std::vector<std::pair<std::string, size_t>>& words, size_t max_merges,
                            size_t min_count) {
  // Each word as its current list of symbols.
  std::vector<std::vector<std::string>> symbols(words.size());
  for (size_t w = 0; w < words.size(); ++w) {
    const std::string& s = words[w].first;
    for (size_t i = 0; i < s.size();) {
      const size_t len = utf8::char_len(s, i);
      symbols[w].push_back(s.substr(i, len));
      i += len;
    }
  }
  BpeTrainingResult result;
  while (result.merges.size() < max_merges) {
    // An ordered map makes the tie-break (smallest pair) fall out of the iteration order.
    std::map<std::pair<std::string, std::string>, size_t> counts;
    for (size_t w = 0; w < words.size(); ++w) {
      const auto& sym = symbols[w];
      for (size_t i = 0; i + 1 < sym.size(); ++i) counts[{sym[i], sym[i + 1]}] += words[w].second;
    }
    const std::pair<std::string, std::string>* best = nullptr;
    size_t best_count = 0;
    for (const auto& [pair, count] : counts) {
      if (count > best_count) {
        best = &pair;
        best_count = count;
      }
    }
    if (best == nullptr || best_count < min_count) break;
    const auto [left, right] = *best;
    const std::string merged = left + right;
    for (auto& sym : symbols) {
      std::vector<std::string> next;
      next.reserve(sym.size());
      for (size_t i = 0; i < sym.size(); ++i) {
        if (i + 1 < sym.size() && sym[i] == left && sym[i + 1] == right) {
          next.push_back(merged);
          ++i;
        } else {
          next.push_back(sym[i]);
        }
      }
      sym = std::move(next);
    }
    result.merges.emplace_back(left, right);
    result.new_tokens.push_back(merged);
  }
  return result;
}

}  // namespace gs
