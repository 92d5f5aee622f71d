// The text normalizer of a tokenizer.json (the kinds Gemma tokenizers use): Replace with a string
// pattern, Prepend, and Sequence of those. Runs on the text between added tokens.
#pragma once
#include <nlohmann/json_fwd.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace gs {

class Normalizer {
 public:
  struct Step {
    enum class Kind { kReplace, kPrepend } kind;
    std::string pattern;  // kReplace: the text to find
    std::string content;  // kReplace: its replacement; kPrepend: the prefix
  };

  Normalizer() = default;  // identity
  explicit Normalizer(std::vector<Step> steps) : steps_(std::move(steps)) {}
  // `j` is the "normalizer" value (null allowed); throws gs::Error naming `source` for kinds
  // this project does not implement.
  static Normalizer from_json(const nlohmann::json& j, const std::string& source);

  std::string apply(std::string_view text) const;
  bool empty() const { return steps_.empty(); }

 private:
  std::vector<Step> steps_;
};

// Replaces every non-overlapping occurrence of `pattern` (left to right) with `content`.
std::string replace_all(std::string_view text, std::string_view pattern, std::string_view content);

}  // namespace gs
