// Sampling defaults and stop ids a checkpoint ships in generation_config.json. The server uses
// them when a request leaves a field out, as the reference implementations do.
#pragma once
#include <nlohmann/json_fwd.hpp>

#include <string>
#include <vector>

namespace gs {

struct GenerationConfig {
  bool from_file = false;         // generation_config.json existed
  std::vector<int> eos_token_ids; // stop ids (generation_config's, else config.json's)
  bool do_sample = false;         // false: greedy unless the request asks otherwise
  float temperature = 1.f;
  int top_k = 0;                  // 0: off
  float top_p = 1.f;
  float min_p = 0.f;

  // `generation` is generation_config.json (null when absent); `model_config` is config.json,
  // whose eos_token_id (top level or in text_config) is the fallback. `label` names the file.
  static GenerationConfig from_json(const nlohmann::json& generation, const nlohmann::json& model_config,
                                    const std::string& label);
};

// Reads an eos_token_id value: an int or a list of ints. Throws gs::Error naming `field`.
std::vector<int> parse_token_id_list(const nlohmann::json& v, const std::string& field);

}  // namespace gs
