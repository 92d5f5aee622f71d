// Small config.json documents for the checkpoint tests, and the conversion of the older flat
// config form into the newer per_layer_config form (what transformers >= 5.15 writes).
#pragma once
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace gs::testing {

using nlohmann::json;

// A tiny text model with every feature switchable. Layer types S/F from `pattern`.
struct TinySpec {
  std::string pattern = "SSFSSF";
  int hidden = 32, q_heads = 2, kv_heads = 1, global_kv = 0, intermediate = 48, window = 8, ple = 0, shared = 0;
  bool k_eq_v = false, double_wide = false, moe = false;
  std::string arch = "Gemma4ForConditionalGeneration";
  int vocab = 64;
};

inline json tiny_text_config(const TinySpec& s) {
  std::vector<std::string> types;
  for (char ch : s.pattern) types.push_back(ch == 'F' ? "full_attention" : "sliding_attention");
  json t = {{"vocab_size", s.vocab},
            {"hidden_size", s.hidden},
            {"intermediate_size", s.intermediate},
            {"num_hidden_layers", int(types.size())},
            {"num_attention_heads", s.q_heads},
            {"num_key_value_heads", s.kv_heads},
            {"num_global_key_value_heads", s.global_kv ? json(s.global_kv) : json(nullptr)},
            {"head_dim", 256},
            {"global_head_dim", 512},
            {"attention_k_eq_v", s.k_eq_v},
            {"sliding_window", s.window},
            {"layer_types", types},
            {"final_logit_softcapping", 30.0},
            {"hidden_size_per_layer_input", s.ple},
            {"vocab_size_per_layer_input", s.vocab},
            {"num_kv_shared_layers", s.shared},
            {"use_double_wide_mlp", s.double_wide},
            {"enable_moe_block", s.moe},
            {"rms_norm_eps", 1e-6},
            {"max_position_embeddings", 256},
            {"eos_token_id", 1}};
  if (s.moe) {
    t["num_experts"] = 4;
    t["top_k_experts"] = 2;
    t["moe_intermediate_size"] = 16;
  }
  return t;
}

inline json tiny_config(const TinySpec& s) {
  json t = tiny_text_config(s);
  if (s.arch == "Gemma4ForCausalLM") {
    t["architectures"] = {s.arch};
    return t;
  }
  return {{"architectures", {s.arch}}, {"text_config", t}, {"eos_token_id", {1, 5}}};
}

// A tiny assistant reading a target of hidden size `backbone`.
inline json tiny_assistant_config(int backbone, bool ordered, int kv_heads = 1, int global_kv = 0,
                                  bool k_eq_v = false) {
  TinySpec s;
  s.pattern = "SSSF";
  s.hidden = 16;
  s.kv_heads = kv_heads;
  s.global_kv = global_kv;
  s.k_eq_v = k_eq_v;
  s.shared = 4;
  json t = tiny_text_config(s);
  t["vocab_size_per_layer_input"] = 0;
  return {{"architectures", {"Gemma4AssistantForCausalLM"}},
          {"backbone_hidden_size", backbone},
          {"use_ordered_embeddings", ordered},
          {"num_centroids", 8},
          {"centroid_intermediate_top_k", 2},
          {"text_config", t}};
}

// The newer form: global_head_dim / num_global_key_value_heads folded into per_layer_config
// entries of the full-attention layers, as transformers' Gemma4TextConfig does.
inline json to_per_layer_form(json cfg) {
  json& t = cfg.contains("text_config") ? cfg["text_config"] : cfg;
  int gd = t.value("global_head_dim", 512);
  json gkv = t.contains("num_global_key_value_heads") ? t["num_global_key_value_heads"] : json(nullptr);
  json over = {{"head_dim", gd}};
  if (t.value("attention_k_eq_v", false) && !gkv.is_null()) over["num_key_value_heads"] = gkv;
  json per_layer = json::object();
  const json& types = t["layer_types"];
  for (size_t i = 0; i < types.size(); ++i)
    if (types[i] == "full_attention" || i + 1 == types.size()) per_layer[std::to_string(i)] = over;
  t.erase("global_head_dim");
  t.erase("num_global_key_value_heads");
  t["per_layer_config"] = per_layer;
  return cfg;
}

}  // namespace gs::testing
