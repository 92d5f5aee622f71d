#include "tokenizer/normalizer.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "tokenizer/json_fields.h"

namespace gs {

std::string replace_all(std::string_view text, std::string_view pattern, std::string_view content) {
  if (pattern.empty()) return std::string(text);
  std::string out;
  out.reserve(text.size() + text.size() / 4);
  size_t pos = 0;
  while (true) {
    const size_t hit = text.find(pattern, pos);
    if (hit == std::string_view::npos) break;
    out.append(text.substr(pos, hit - pos)).append(content);
    pos = hit + pattern.size();
  }
  out.append(text.substr(pos));
  return out;
}

namespace {
void parse_into(const nlohmann::json& j, const std::string& where, std::vector<Normalizer::Step>& steps) {
  const std::string type = json_string(j, "type", where);
  if (type == "Sequence") {
    const auto& list = json_array(j, "normalizers", where);
    for (size_t i = 0; i < list.size(); ++i) parse_into(list[i], fmt::format("{}.normalizers[{}]", where, i), steps);
  } else if (type == "Replace") {
    steps.push_back({Normalizer::Step::Kind::kReplace, json_string_pattern(j, where), json_string(j, "content", where)});
  } else if (type == "Prepend") {
    steps.push_back({Normalizer::Step::Kind::kPrepend, "", json_string(j, "prepend", where)});
  } else {
    throw Error("{}: type '{}' is not supported (gemmaserve supports Replace, Prepend, Sequence)", where, type);
  }
}
}  // namespace

Normalizer Normalizer::from_json(const nlohmann::json& j, const std::string& source) {
  std::vector<Step> steps;
  if (!j.is_null()) parse_into(j, source + ": normalizer", steps);
  return Normalizer(std::move(steps));
}

std::string Normalizer::apply(std::string_view text) const {
  std::string s(text);
  for (const Step& step : steps_) {
    if (step.kind == Step::Kind::kReplace) {
      s = replace_all(s, step.pattern, step.content);
    } else if (!s.empty()) {  // Prepend leaves an empty text empty, as the reference does
      s.insert(0, step.content);
    }
  }
  return s;
}

}  // namespace gs
