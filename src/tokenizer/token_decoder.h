// The decoder of a tokenizer.json: turns token strings back into text. Supports what Gemma uses:
// Sequence of Replace (string pattern), ByteFallback, Fuse and Strip; no decoder joins the
// tokens with spaces, as the reference does.
#pragma once
#include <nlohmann/json_fwd.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace gs {

class TokenDecoder {
 public:
  struct Step {
    enum class Kind { kReplace, kByteFallback, kFuse, kStrip } kind;
    std::string pattern;  // kReplace
    std::string content;  // kReplace: replacement; kStrip: the character stripped
    int start = 0;        // kStrip: how many leading `content` characters to remove
    int stop = 0;         // kStrip: how many trailing ones
  };

  TokenDecoder() = default;  // "no decoder"
  explicit TokenDecoder(std::vector<Step> steps) : steps_(std::move(steps)), present_(true) {}
  static TokenDecoder from_json(const nlohmann::json& j, const std::string& source);

  std::string decode(std::vector<std::string> tokens) const;

 private:
  std::vector<Step> steps_;
  bool present_ = false;
};

// The byte of a "<0xXX>" byte-fallback token, or -1.
int byte_token_value(std::string_view token);

}  // namespace gs
