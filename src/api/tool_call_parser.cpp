#include "api/tool_call_parser.h"

#include <nlohmann/json.hpp>

#include <cctype>

namespace gs::api {

namespace {

using nlohmann::json;

// A recursive-descent reader of the tool-call value syntax. Every method returns false on text
// that does not fit; nothing throws.
class ValueReader {
 public:
  explicit ValueReader(std::string_view s) : s_(s) {}

  bool object(json& out) {
    if (!eat('{')) return false;
    out = json::object();
    skip_ws();
    if (eat('}')) return true;
    while (true) {
      std::string key;
      if (!this->key(key) || !eat(':')) return false;
      json v;
      if (!value(v)) return false;
      out[key] = std::move(v);
      skip_ws();
      if (eat('}')) return true;
      if (!eat(',')) return false;
    }
  }

  bool at_end() {
    skip_ws();
    return pos_ == s_.size();
  }

 private:
  bool value(json& out) {
    skip_ws();
    if (pos_ >= s_.size()) return false;
    if (s_.substr(pos_).starts_with(kToolStringDelimiter)) return string(out);
    char c = s_[pos_];
    if (c == '{') return object(out);
    if (c == '[') return array(out);
    // A bare scalar runs to the next delimiter of the enclosing structure.
    size_t end = pos_;
    while (end < s_.size() && s_[end] != ',' && s_[end] != '}' && s_[end] != ']') ++end;
    std::string_view word = trim(s_.substr(pos_, end - pos_));
    pos_ = end;
    if (word.empty()) return false;
    if (word == "true") out = true;
    else if (word == "false") out = false;
    else if (word == "null") out = nullptr;
    else {
      json num = json::parse(word, nullptr, /*allow_exceptions=*/false);
      // Not a number: keep the bare text as a string rather than failing the call.
      out = num.is_number() ? num : json(std::string(word));
    }
    return true;
  }

  bool array(json& out) {
    eat('[');
    out = json::array();
    skip_ws();
    if (eat(']')) return true;
    while (true) {
      json v;
      if (!value(v)) return false;
      out.push_back(std::move(v));
      skip_ws();
      if (eat(']')) return true;
      if (!eat(',')) return false;
    }
  }

  bool string(json& out) {
    pos_ += kToolStringDelimiter.size();
    size_t end = s_.find(kToolStringDelimiter, pos_);
    if (end == std::string_view::npos) return false;
    out = std::string(s_.substr(pos_, end - pos_));
    pos_ = end + kToolStringDelimiter.size();
    return true;
  }

  bool key(std::string& out) {
    skip_ws();
    if (s_.substr(pos_).starts_with(kToolStringDelimiter)) {
      json k;
      if (!string(k)) return false;
      out = k.get<std::string>();
      return !out.empty();
    }
    size_t end = pos_;
    while (end < s_.size() && s_[end] != ':' && s_[end] != ',' && s_[end] != '}') ++end;
    out = std::string(trim(s_.substr(pos_, end - pos_)));
    pos_ = end;
    return !out.empty();
  }

  static std::string_view trim(std::string_view w) {
    while (!w.empty() && std::isspace(static_cast<unsigned char>(w.front()))) w.remove_prefix(1);
    while (!w.empty() && std::isspace(static_cast<unsigned char>(w.back()))) w.remove_suffix(1);
    return w;
  }
  void skip_ws() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool eat(char c) {
    skip_ws();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  std::string_view s_;
  size_t pos_ = 0;
};

}  // namespace

std::optional<ParsedToolCall> parse_tool_call(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  constexpr std::string_view kCall = "call:";
  if (!text.starts_with(kCall)) return std::nullopt;
  text.remove_prefix(kCall.size());
  size_t brace = text.find('{');
  if (brace == std::string_view::npos || brace == 0) return std::nullopt;
  std::string name(text.substr(0, brace));
  for (char c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.')) return std::nullopt;
  }
  ValueReader r(text.substr(brace));
  json args;
  if (!r.object(args) || !r.at_end()) return std::nullopt;
  return ParsedToolCall{std::move(name), args.dump()};
}

}  // namespace gs::api
