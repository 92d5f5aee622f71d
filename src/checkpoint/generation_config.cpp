#include "checkpoint/generation_config.h"

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace gs {

using nlohmann::json;

std::vector<int> parse_token_id_list(const json& v, const std::string& field) {
  std::vector<int> ids;
  auto one = [&](const json& x) {
    if (!x.is_number_integer() || x.get<int64_t>() < 0 || x.get<int64_t>() > INT32_MAX)
      throw Error("{}: expected a token id (non-negative integer), got {}", field, x.dump());
    ids.push_back(x.get<int>());
  };
  if (v.is_array()) {
    for (const json& x : v) one(x);
  } else {
    one(v);
  }
  return ids;
}

namespace {

float number(const json& j, const char* key, float dflt, const std::string& label) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return dflt;
  if (!it->is_number()) throw Error("{}: '{}' must be a number, got {}", label, key, it->dump());
  return it->get<float>();
}

}  // namespace

GenerationConfig GenerationConfig::from_json(const json& generation, const json& model_config,
                                             const std::string& label) {
  GenerationConfig g;
  auto eos_in = [](const json& j) -> const json* {
    if (!j.is_object()) return nullptr;
    auto it = j.find("eos_token_id");
    return it == j.end() || it->is_null() ? nullptr : &*it;
  };
  if (const json* e = eos_in(model_config)) {
    g.eos_token_ids = parse_token_id_list(*e, "config.json: eos_token_id");
  } else if (model_config.is_object() && model_config.contains("text_config")) {
    if (const json* t = eos_in(model_config["text_config"]))
      g.eos_token_ids = parse_token_id_list(*t, "config.json: text_config.eos_token_id");
  }
  if (generation.is_null()) return g;
  if (!generation.is_object()) throw Error("{}: expected a JSON object", label);
  g.from_file = true;
  if (const json* e = eos_in(generation)) g.eos_token_ids = parse_token_id_list(*e, label + ": eos_token_id");
  if (auto it = generation.find("do_sample"); it != generation.end() && !it->is_null()) {
    if (!it->is_boolean()) throw Error("{}: 'do_sample' must be true or false", label);
    g.do_sample = it->get<bool>();
  }
  g.temperature = number(generation, "temperature", g.temperature, label);
  g.top_p = number(generation, "top_p", g.top_p, label);
  g.min_p = number(generation, "min_p", g.min_p, label);
  if (auto it = generation.find("top_k"); it != generation.end() && !it->is_null()) {
    if (!it->is_number_integer()) throw Error("{}: 'top_k' must be an integer", label);
    g.top_k = it->get<int>();
  }
  if (g.temperature < 0) throw Error("{}: 'temperature' must be >= 0, got {}", label, g.temperature);
  if (g.top_p <= 0 || g.top_p > 1) throw Error("{}: 'top_p' must be in (0, 1], got {}", label, g.top_p);
  if (g.top_k < 0) throw Error("{}: 'top_k' must be >= 0, got {}", label, g.top_k);
  return g;
}

}  // namespace gs
