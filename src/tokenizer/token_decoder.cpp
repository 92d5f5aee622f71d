#include "tokenizer/token_decoder.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "tokenizer/json_fields.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/utf8.h"

namespace gs {

int byte_token_value(std::string_view t) {
  if (t.size() != 6 || t.substr(0, 3) != "<0x" || t[5] != '>') return -1;
  int v = 0;
  for (size_t i = 3; i < 5; ++i) {
    const char c = t[i];
    int d;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
    else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    else return -1;
    v = v * 16 + d;
  }
  return v;
}

namespace {

void parse_into(const nlohmann::json& j, const std::string& where, std::vector<TokenDecoder::Step>& out) {
  using K = TokenDecoder::Step::Kind;
  const std::string type = json_string(j, "type", where);
  if (type == "Sequence") {
    const auto& list = json_array(j, "decoders", where);
    for (size_t i = 0; i < list.size(); ++i) parse_into(list[i], fmt::format("{}.decoders[{}]", where, i), out);
  } else if (type == "Replace") {
    out.push_back({K::kReplace, json_string_pattern(j, where), json_string(j, "content", where)});
  } else if (type == "ByteFallback") {
    out.push_back({K::kByteFallback, "", ""});
  } else if (type == "Fuse") {
    out.push_back({K::kFuse, "", ""});
  } else if (type == "Strip") {
    TokenDecoder::Step s{K::kStrip, "", json_string(j, "content", where)};
    GS_CHECK(utf8::is_valid(s.content) && !s.content.empty() && utf8::char_len(s.content, 0) == s.content.size(),
             "{}: Strip content must be one character", where);
    const long long start = json_int(j, "start", where), stop = json_int(j, "stop", where);
    GS_CHECK(start >= 0 && stop >= 0 && start < 1000000 && stop < 1000000, "{}: Strip start/stop out of range", where);
    s.start = static_cast<int>(start);
    s.stop = static_cast<int>(stop);
    out.push_back(std::move(s));
  } else {
    throw Error("{}: type '{}' is not supported (gemmaserve supports Replace, ByteFallback, Fuse, Strip, Sequence)",
                where, type);
  }
}

// Runs of <0xXX> tokens become their bytes when those are valid UTF-8, else one U+FFFD per byte.
std::vector<std::string> byte_fallback(std::vector<std::string> tokens) {
  std::vector<std::string> out;
  out.reserve(tokens.size());
  std::string bytes;
  size_t n_bytes = 0;
  auto flush = [&] {
    if (n_bytes == 0) return;
    if (utf8::is_valid(bytes)) {
      out.push_back(bytes);
    } else {
      for (size_t i = 0; i < n_bytes; ++i) out.emplace_back("\xEF\xBF\xBD");
    }
    bytes.clear();
    n_bytes = 0;
  };
  for (auto& t : tokens) {
    const int b = byte_token_value(t);
    if (b >= 0) {
      bytes += static_cast<char>(b);
      ++n_bytes;
    } else {
      flush();
      out.push_back(std::move(t));
    }
  }
  flush();
  return out;
}

std::string strip(const std::string& t, const std::string& ch, int start, int stop) {
  size_t b = 0, e = t.size();
  for (int i = 0; i < start && e - b >= ch.size() && t.compare(b, ch.size(), ch) == 0; ++i) b += ch.size();
  for (int i = 0; i < stop && e - b >= ch.size() && t.compare(e - ch.size(), ch.size(), ch) == 0; ++i) e -= ch.size();
  return t.substr(b, e - b);
}

}  // namespace

TokenDecoder TokenDecoder::from_json(const nlohmann::json& j, const std::string& source) {
  if (j.is_null()) return TokenDecoder();
  std::vector<Step> steps;
  parse_into(j, source + ": decoder", steps);
  return TokenDecoder(std::move(steps));
}

std::string TokenDecoder::decode(std::vector<std::string> tokens) const {
  if (!present_) {
    std::string joined;
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (i) joined += ' ';
      joined += tokens[i];
    }
    return joined;
  }
  for (const Step& step : steps_) {
    switch (step.kind) {
      case Step::Kind::kReplace:
        for (auto& t : tokens) t = replace_all(t, step.pattern, step.content);
        break;
      case Step::Kind::kByteFallback:
        tokens = byte_fallback(std::move(tokens));
        break;
      case Step::Kind::kFuse: {
        std::string all;
        for (const auto& t : tokens) all += t;
        tokens.assign(1, std::move(all));
        break;
      }
      case Step::Kind::kStrip:
        for (auto& t : tokens) t = strip(t, step.content, step.start, step.stop);
        break;
    }
  }
  std::string out;
  for (const auto& t : tokens) out += t;
  return out;
}

}  // namespace gs
