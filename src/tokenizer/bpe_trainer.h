// A small, deterministic BPE trainer: learns merges from word counts by repeatedly joining the
// most frequent adjacent pair. Used to build the built-in demo tokenizer; not meant for real
// corpora (it recounts pairs after every merge).
#pragma once
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace gs {

struct BpeTrainingResult {
  std::vector<std::pair<std::string, std::string>> merges;  // in rank order
  std::vector<std::string> new_tokens;                      // merged token of each merge, same order
};

// `words`: the training words with their counts (each already in vocabulary form, e.g. "▁the").
// Starts from single characters and learns at most `max_merges` merges; pairs seen fewer than
// `min_count` times are not merged. Ties go to the lexicographically smallest pair, so the result
// depends only on the input.
BpeTrainingResult train_bpe(const std::vector<std::pair<std::string, size_t>>& words, size_t max_merges,
                            size_t min_count);

}  // namespace gs
