#include "tokenizer/bpe_trainer.h"

#include <unordered_map>
#include <unordered_set>

#include "tokenizer/utf8.h"

namespace gs {

namespace {

uint64_t pair_key(int a, int b) { return (static_cast<uint64_t>(a) << 32) | static_cast<uint32_t>(b); }

}  // namespace

BpeTrainingResult train_bpe(const std::vector<std::pair<std::string, size_t>>& words, size_t max_merges,
                            size_t min_count) {
  // Symbols are numbered; each word is its current list of symbol numbers.
  std::vector<std::string> names;
  std::unordered_map<std::string, int> number;
  auto symbol = [&](const std::string& s) {
    auto [it, added] = number.emplace(s, static_cast<int>(names.size()));
    if (added) names.push_back(s);
    return it->second;
  };
  std::vector<std::vector<int>> seqs(words.size());
  for (size_t w = 0; w < words.size(); ++w) {
    const std::string& s = words[w].first;
    for (size_t i = 0; i < s.size();) {
      const size_t len = utf8::char_len(s, i);
      seqs[w].push_back(symbol(s.substr(i, len)));
      i += len;
    }
  }

  // Pair counts over all words, and which words hold each pair, kept up to date as merges
  // rewrite the few words they touch.
  std::unordered_map<uint64_t, size_t> counts;
  std::unordered_map<uint64_t, std::unordered_set<size_t>> where;
  auto account = [&](size_t w, bool add) {
    const auto& seq = seqs[w];
    for (size_t i = 0; i + 1 < seq.size(); ++i) {
      const uint64_t k = pair_key(seq[i], seq[i + 1]);
      if (add) {
        counts[k] += words[w].second;
        where[k].insert(w);
      } else if ((counts[k] -= words[w].second) == 0) {
        counts.erase(k);
      }
    }
  };
  for (size_t w = 0; w < words.size(); ++w) account(w, true);

  BpeTrainingResult result;
  while (result.merges.size() < max_merges) {
    // Most frequent pair; ties go to the smallest (left, right) by text, so hashing order never
    // shows in the result.
    int best_l = -1, best_r = -1;
    size_t best_count = 0;
    for (const auto& [k, count] : counts) {
      const int l = static_cast<int>(k >> 32), r = static_cast<int>(k & 0xFFFFFFFFu);
      const bool better =
          count > best_count ||
          (count == best_count && best_l >= 0 &&
           std::make_pair(std::string_view(names[l]), std::string_view(names[r])) <
               std::make_pair(std::string_view(names[best_l]), std::string_view(names[best_r])));
      if (better) {
        best_l = l;
        best_r = r;
        best_count = count;
      }
    }
    if (best_l < 0 || best_count < min_count) break;
    const std::string left = names[best_l], right = names[best_r];
    const int merged = symbol(left + right);
    const uint64_t best_key = pair_key(best_l, best_r);
    const std::unordered_set<size_t> touched = std::move(where[best_key]);
    where.erase(best_key);
    for (size_t w : touched) {
      account(w, false);
      auto& seq = seqs[w];
      size_t out = 0;
      for (size_t i = 0; i < seq.size(); ++i) {
        if (i + 1 < seq.size() && seq[i] == best_l && seq[i + 1] == best_r) {
          seq[out++] = merged;
          ++i;
        } else {
          seq[out++] = seq[i];
        }
      }
      seq.resize(out);
      account(w, true);
    }
    result.merges.emplace_back(left, right);
    result.new_tokens.push_back(left + right);
  }
  return result;
}

}  // namespace gs
