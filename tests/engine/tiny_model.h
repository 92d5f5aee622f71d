// A tiny Gemma-4 (sliding + full layers, PLE, KV-shared tail, soft-cap) with random weights on the
// cpu backend, small enough that a few hundred engine steps take well under a second each.
#pragma once
#include <nlohmann/json.hpp>

#include <memory>

#include "kernels/cpu/cpu_backend.h"
#include "model/dummy_weights.h"
#include "model/gemma4_model.h"

namespace gs::testing {

inline nlohmann::json tiny_config_json(int window = 16) {
  nlohmann::json t = {
      {"model_type", "gemma4_text"},
      {"vocab_size", 512},
      {"hidden_size", 64},
      {"intermediate_size", 128},
      {"num_hidden_layers", 6},
      {"num_attention_heads", 2},
      {"num_key_value_heads", 1},
      {"num_global_key_value_heads", nullptr},
      {"head_dim", 32},
      {"global_head_dim", 64},
      {"attention_k_eq_v", false},
      {"hidden_activation", "gelu_pytorch_tanh"},
      {"max_position_embeddings", 1024},
      {"rms_norm_eps", 1e-6},
      {"sliding_window", window},
      {"final_logit_softcapping", 30.0},
      {"use_bidirectional_attention", nullptr},
      {"hidden_size_per_layer_input", 8},
      {"vocab_size_per_layer_input", 512},
      {"num_kv_shared_layers", 2},
      {"use_double_wide_mlp", false},
      {"enable_moe_block", false},
      {"tie_word_embeddings", true},
      {"attention_bias", false},
      {"pad_token_id", 0},
      {"bos_token_id", 2},
      {"eos_token_id", 1},
      {"layer_types",
       {"sliding_attention", "sliding_attention", "full_attention", "sliding_attention", "sliding_attention",
        "full_attention"}},
      {"rope_parameters",
       {{"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 10000.0}}},
        {"full_attention", {{"rope_type", "proportional"}, {"partial_rotary_factor", 0.25}, {"rope_theta", 1e6}}}}},
  };
  return {{"architectures", {"Gemma4ForCausalLM"}}, {"model_type", "gemma4_text"}, {"text_config", t},
          {"eos_token_id", {1}}};
}

struct TinyModel {
  std::unique_ptr<Backend> backend;
  std::shared_ptr<Gemma4Model> model;
};

// A fresh model object over fresh weights from `seed` (equal seeds: equal models).
inline TinyModel make_tiny_model(uint64_t seed, int window = 16) {
  TinyModel m;
  m.backend = make_cpu_backend(1);
  ModelConfig cfg = ModelConfig::from_json(tiny_config_json(window));
  ModelWeights w = make_dummy_weights(cfg, *m.backend, seed);
  m.model = std::make_shared<Gemma4Model>(cfg, std::move(w), *m.backend);
  return m;
}

}  // namespace gs::testing
