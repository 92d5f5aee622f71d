// Loading the golden fixtures of fixtures/golden/<combo>/ (made by tools/reference/make_golden.py
// with Hugging Face transformers in float32) and a CPU model of the same checkpoint.
#pragma once
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "core/npy.h"
#include "kernels/cpu/cpu_backend.h"
#include "model/gemma4_model.h"
#include "model/weight_loader.h"

namespace gs::test {

inline const std::vector<std::string>& golden_combos() {
  static const std::vector<std::string> combos{"dense", "e2b_like", "k_eq_v", "moe", "multimodal", "f16_nocap"};
  return combos;
}

inline std::string golden_dir(const std::string& combo) { return std::string(GS_SOURCE_DIR) + "/fixtures/golden/" + combo; }

struct Golden {
  std::vector<int> tokens;
  std::vector<float> logits;  // [T, V]
  int vocab = 0;
  std::vector<int> generated;  // greedy continuation of tokens
};

inline Golden load_golden(const std::string& combo) {
  const std::string dir = golden_dir(combo);
  Golden g;
  g.tokens = npy_token_ids(read_npy(dir + "/tokens.npy"), dir + "/tokens.npy");
  NpyArray l = read_npy(dir + "/logits.npy");
  EXPECT_EQ(l.dtype, DType::F32);
  EXPECT_EQ(l.shape.size(), 2u);
  EXPECT_EQ(l.shape[0], int64_t(g.tokens.size()));
  g.vocab = int(l.shape[1]);
  g.logits.assign(l.as<float>(), l.as<float>() + l.numel());
  std::ifstream f(dir + "/greedy.json");
  const nlohmann::json j = nlohmann::json::parse(f);
  g.generated = j.at("generated").get<std::vector<int>>();
  return g;
}

// A CPU model of the fixture's checkpoint. The backend must outlive the model.
struct LoadedModel {
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Gemma4Model> model;
};

inline LoadedModel load_cpu_model(const std::string& combo, int threads = 2) {
  LoadedModel m;
  m.backend = make_cpu_backend(threads);
  auto ckpt = Checkpoint::open(golden_dir(combo));
  ModelConfig cfg = ModelConfig::from_json(ckpt->config_json());
  ModelWeights w = load_weights(*ckpt, cfg, *m.backend);
  m.model = std::make_unique<Gemma4Model>(cfg, std::move(w), *m.backend);
  return m;
}

}  // namespace gs::test
