// The pre-tokenizer of a tokenizer.json: Split (string pattern, every delimiter behavior,
// invert) and Sequence. It cuts normalized text into the words the BPE model sees. Also the
// newline-run split of GGUF "gemma4" vocabularies.
#pragma once
#include <nlohmann/json_fwd.hpp>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gs {

class PreTokenizer {
 public:
  enum class Behavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };
  struct Split {
    enum class Pattern { kString, kNewlineRuns } pattern_kind = Pattern::kString;
    std::string pattern;  // kString
    Behavior behavior = Behavior::kIsolated;
    bool invert = false;
  };
  using Range = std::pair<size_t, size_t>;  // [begin, end) in the text

  PreTokenizer() = default;  // the whole text is one word
  explicit PreTokenizer(std::vector<Split> splits) : splits_(std::move(splits)) {}
  static PreTokenizer from_json(const nlohmann::json& j, const std::string& source);

  // Non-empty words of `text`, in order.
  std::vector<Range> words(std::string_view text) const;

 private:
  static std::vector<Range> apply(const Split& split, std::string_view text, Range range);
  std::vector<Split> splits_;  // applied one after the other, each to every word of the last
};

}  // namespace gs
