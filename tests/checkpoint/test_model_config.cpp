#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>

#include "appendix_a.h"
#include "checkpoint/checkpoint.h"
#include "configs.h"
#include "core/error.h"
#include "model/model_config.h"
#include "model/presets.h"
#include "model/random_checkpoint.h"

namespace gs {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using nlohmann::json;

// One layer in Appendix A's notation: "15:S(d256,kv1,I12288->13)".
std::string appendix_entry(const ModelConfig& c, int i) {
  const LayerSpec& l = c.layers[i];
  std::string s = fmt::format("{}:{}(d{},kv{}{},I{}", i, l.type == LayerType::Full ? "F" : "S", l.head_dim,
                              l.num_kv_heads, l.k_eq_v ? ",keqv" : "", l.intermediate);
  if (!l.owns_kv) s += fmt::format("->{}", l.kv_source);
  return s + ")";
}

std::string appendix_map(const ModelConfig& c) {
  std::string s;
  for (int i = 0; i < c.num_layers; ++i) s += (i ? " " : "") + appendix_entry(c, i);
  return s;
}

std::string config_error(const json& j) {
  try {
    ModelConfig::from_json(j);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

void expect_same_structure(const ModelConfig& a, const ModelConfig& b) {
  ASSERT_EQ(a.num_layers, b.num_layers);
  EXPECT_EQ(a.global_head_dim, b.global_head_dim);
  EXPECT_EQ(a.num_global_kv_heads, b.num_global_kv_heads);
  for (int i = 0; i < a.num_layers; ++i) {
    const LayerSpec &x = a.layers[i], &y = b.layers[i];
    SCOPED_TRACE(i);
    EXPECT_EQ(x.type, y.type);
    EXPECT_EQ(x.head_dim, y.head_dim);
    EXPECT_EQ(x.num_kv_heads, y.num_kv_heads);
    EXPECT_EQ(x.k_eq_v, y.k_eq_v);
    EXPECT_EQ(x.intermediate, y.intermediate);
    EXPECT_EQ(x.sliding_window, y.sliding_window);
    EXPECT_EQ(x.owns_kv, y.owns_kv);
    EXPECT_EQ(x.kv_source, y.kv_source);
    EXPECT_EQ(x.kv_slot, y.kv_slot);
    EXPECT_EQ(x.rope.theta, y.rope.theta);
    EXPECT_EQ(x.rope.rotary_pairs, y.rope.rotary_pairs);
    EXPECT_EQ(x.rope.freq_dim, y.rope.freq_dim);
  }
}

TEST(ModelConfig, PresetsReproduceAppendixA) {
  for (const auto& [name, expected] : testing::appendix_a()) {
    SCOPED_TRACE(name);
    ModelConfig c = preset_config(name);
    EXPECT_EQ(appendix_map(c), expected);
    EXPECT_EQ(c.architecture, "Gemma4ForConditionalGeneration");
    EXPECT_EQ(c.weight_prefix, "model.language_model.");
    EXPECT_EQ(c.final_logit_softcap, 30.f);
    EXPECT_EQ(c.eos_token_ids, (std::vector<int>{1, 106}));
  }
}

TEST(ModelConfig, KvGeometryOfSection1_7) {
  struct Row {
    const char* name;
    int sliding_layers, full_layers;
    size_t sliding_bytes, full_bytes;
    int window;
  };
  for (const Row& r : {Row{"e2b", 12, 3, 12288, 6144, 512}, Row{"e4b", 20, 4, 40960, 16384, 512},
                       Row{"26b-a4b", 25, 5, 204800, 20480, 1024}, Row{"31b", 50, 10, 819200, 81920, 1024}}) {
    SCOPED_TRACE(r.name);
    ModelConfig c = preset_config(r.name);
    EXPECT_EQ(c.num_cache_layers(KvGroup::Sliding), r.sliding_layers);
    EXPECT_EQ(c.num_cache_layers(KvGroup::Full), r.full_layers);
    EXPECT_EQ(c.kv_bytes_per_token(KvGroup::Sliding, 2), r.sliding_bytes);
    EXPECT_EQ(c.kv_bytes_per_token(KvGroup::Full, 2), r.full_bytes);
    EXPECT_EQ(c.kv_head_dim(KvGroup::Sliding), 256);
    EXPECT_EQ(c.kv_head_dim(KvGroup::Full), 512);
    EXPECT_EQ(c.sliding_window, r.window);
    // RoPE: sliding rotates all 128 pairs at theta 1e4; full rotates 64 of 256 pairs at 1e6 over 512.
    EXPECT_EQ(c.rope_sliding.rotary_pairs, 128);
    EXPECT_EQ(c.rope_sliding.theta, 1e4f);
    EXPECT_EQ(c.rope_full.rotary_pairs, 64);
    EXPECT_EQ(c.rope_full.freq_dim, 512);
    EXPECT_EQ(c.rope_full.theta, 1e6f);
  }
  ModelConfig e2b = preset_config("e2b");
  EXPECT_EQ(e2b.first_kv_shared_layer(), 15);
  EXPECT_EQ(e2b.layers[20].kv_slot, e2b.layers[13].kv_slot);
  EXPECT_EQ(e2b.layers[13].kv_slot, 11);  // the 12th sliding cache layer
  EXPECT_EQ(e2b.layers[14].kv_slot, 2);   // the 3rd full cache layer
  ModelConfig moe = preset_config("26b-a4b");
  EXPECT_TRUE(moe.moe);
  EXPECT_EQ(moe.num_experts, 128);
  EXPECT_EQ(moe.top_k_experts, 8);
  EXPECT_EQ(moe.moe_intermediate_size, 704);
  EXPECT_EQ(moe.bidirectional, "vision");
}

// §1.5: E2B ≈ 4.63 B, E4B ≈ 7.46 B, 26B-A4B ≈ 25.2 B, 31B ≈ 30.7 B text parameters.
TEST(ModelConfig, ParameterCountsMatchTheReleasedSizes) {
  EXPECT_NEAR(preset_config("e2b").parameter_count() / 1e9, 4.63, 0.01);
  EXPECT_NEAR(preset_config("e4b").parameter_count() / 1e9, 7.46, 0.01);
  EXPECT_NEAR(preset_config("26b-a4b").parameter_count() / 1e9, 25.2, 0.05);
  EXPECT_NEAR(preset_config("31b").parameter_count() / 1e9, 30.7, 0.05);
  // ... and equal what a checkpoint of that shape stores (the integer ordering is no parameter).
  for (const std::string& name : preset_names()) {
    SCOPED_TRACE(name);
    ModelConfig c = preset_config(name);
    long long stored = 0, vision = 0;
    for (const auto& t : checkpoint_tensors(c, DType::BF16)) {
      if (t.init == WeightInit::Permutation) continue;
      (Checkpoint::is_vision_name(t.decl.name) ? vision : stored) += (long long)(t.decl.nbytes() / 2);
    }
    EXPECT_EQ(stored, c.parameter_count());
    // The towers (§4.2, gated MLPs): ~0.57 B (26B/31B: 27 layers, hidden 1152, MLP 4304) and ~0.17 B
    // (E2B/E4B: 16 layers, hidden 768, MLP 3072), the model cards' ~550 M and ~150 M plus the
    // position tables and the projection.
    if (name == "31b" || name == "26b-a4b") EXPECT_NEAR(vision / 1e9, 0.57, 0.03);
    if (name == "e2b" || name == "e4b") EXPECT_NEAR(vision / 1e9, 0.17, 0.02);
    EXPECT_EQ(vision > 0, c.has_vision());
  }
}

TEST(ModelConfig, FlatAndPerLayerFormsAgree) {
  for (const std::string& name : preset_names()) {
    SCOPED_TRACE(name);
    json flat = preset_config_json(name);
    json newer = testing::to_per_layer_form(flat);
    ASSERT_TRUE(newer.dump().find("per_layer_config") != std::string::npos);
    ASSERT_TRUE(newer.dump().find("global_head_dim") == std::string::npos);
    expect_same_structure(ModelConfig::from_json(flat), ModelConfig::from_json(newer));
  }
}

TEST(ModelConfig, AssistantsBindToTheLastOwnerOfEachType) {
  struct Row {
    const char* name;
    int sliding_src, full_src;
  };
  for (const Row& r : {Row{"e2b-assistant", 13, 14}, Row{"e4b-assistant", 22, 23},
                       Row{"26b-a4b-assistant", 28, 29}, Row{"31b-assistant", 58, 59}}) {
    SCOPED_TRACE(r.name);
    ModelConfig a = preset_config(r.name);
    ModelConfig t = preset_config(preset_target(r.name));
    EXPECT_TRUE(a.is_assistant);
    EXPECT_EQ(a.weight_prefix, "model.");
    EXPECT_EQ(a.num_kv_shared_layers, 4);
    for (const LayerSpec& l : a.layers) {
      EXPECT_FALSE(l.owns_kv);
      EXPECT_EQ(l.kv_source, -1);
    }
    a.bind_assistant_to(t);
    for (int i = 0; i < 4; ++i) {
      const LayerSpec& l = a.layers[i];
      int src = i < 3 ? r.sliding_src : r.full_src;
      EXPECT_EQ(l.kv_source, src);
      EXPECT_EQ(l.kv_slot, t.layers[src].kv_slot);
      EXPECT_EQ(l.head_dim, t.layers[src].head_dim);
    }
  }
  ModelConfig a = preset_config("e2b-assistant");
  EXPECT_TRUE(a.use_ordered_embeddings);
  EXPECT_EQ(a.num_centroids, 2048);
  EXPECT_EQ(a.centroid_top_k, 32);
  EXPECT_EQ(a.backbone_hidden_size, 1536);
  try {
    a.bind_assistant_to(preset_config("e4b"));  // wrong target
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("backbone_hidden_size 1536"));
  }
  json j = preset_config_json("e2b-assistant");
  j["backbone_hidden_size"] = 2560;
  ModelConfig wrong = ModelConfig::from_json(j);
  try {
    wrong.bind_assistant_to(preset_config("e4b"));  // right width, but 1 KV head vs E4B's 2
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), AllOf(HasSubstr("does not match target layer 22"), HasSubstr("KV heads")));
  }
}

TEST(ModelConfig, DefaultsAndForms) {
  testing::TinySpec s;
  s.pattern = "SSSSSSSSSSS";  // 11 layers, layer_types removed below
  json j = testing::tiny_config(s);
  j["text_config"].erase("layer_types");
  ModelConfig c = ModelConfig::from_json(j);
  for (int i = 0; i < 11; ++i)  // every sixth layer full, and the last one forced full
    EXPECT_EQ(c.layers[i].type, i == 5 || i == 10 ? LayerType::Full : LayerType::Sliding) << i;
  EXPECT_EQ(c.eos_token_ids, (std::vector<int>{1, 5}));

  s.pattern = "SSS";  // explicit types whose last is sliding: forced full, as transformers does
  EXPECT_EQ(ModelConfig::from_json(testing::tiny_config(s)).layers[2].type, LayerType::Full);

  s.arch = "Gemma4ForCausalLM";
  ModelConfig flat = ModelConfig::from_json(testing::tiny_config(s));
  EXPECT_EQ(flat.weight_prefix, "model.");
  EXPECT_EQ(flat.eos_token_ids, std::vector<int>{1});
  json no_arch = testing::tiny_config(s);
  no_arch.erase("architectures");
  no_arch["model_type"] = "gemma4_text";
  EXPECT_EQ(ModelConfig::from_json(no_arch).architecture, "Gemma4ForCausalLM");
}

TEST(ModelConfig, GoldenFixtureConfigsFromTransformers) {
  // config.json files written by transformers 5.17 (per_layer_config form).
  for (const char* combo : {"dense", "e2b_like", "k_eq_v", "moe", "multimodal", "f16_nocap"}) {
    SCOPED_TRACE(combo);
    std::string path = std::string(GS_SOURCE_DIR) + "/fixtures/golden/" + combo + "/config.json";
    ModelConfig c = ModelConfig::from_file(path);
    EXPECT_EQ(c.global_head_dim, 512);
    EXPECT_FALSE(c.describe().empty());
  }
  ModelConfig e = ModelConfig::from_file(std::string(GS_SOURCE_DIR) + "/fixtures/golden/e2b_like/config.json");
  EXPECT_EQ(appendix_map(e), "0:S(d256,kv1,I96) 1:F(d512,kv1,I96) 2:S(d256,kv1,I96) 3:S(d256,kv1,I192->2) "
                             "4:F(d512,kv1,I192->1)");
  ModelConfig k = ModelConfig::from_file(std::string(GS_SOURCE_DIR) + "/fixtures/golden/k_eq_v/config.json");
  EXPECT_EQ(appendix_map(k), "0:S(d256,kv2,I96) 1:S(d256,kv2,I96) 2:F(d512,kv1,keqv,I96)");
  EXPECT_EQ(k.num_global_kv_heads, 1);
}

TEST(ModelConfig, ClearErrorsNameTheField) {
  testing::TinySpec s;
  auto without = [&](const char* field) {
    json j = testing::tiny_config(s);
    j["text_config"].erase(field);
    return config_error(j);
  };
  EXPECT_THAT(without("hidden_size"), HasSubstr("text_config.hidden_size is missing"));
  EXPECT_THAT(without("num_hidden_layers"), HasSubstr("text_config.num_hidden_layers is missing"));
  EXPECT_THAT(without("vocab_size"), HasSubstr("text_config.vocab_size is missing"));
  auto with = [&](const std::string& field, json v) {
    json j = testing::tiny_config(s);
    j["text_config"][field] = v;
    return config_error(j);
  };
  EXPECT_THAT(with("hidden_size", "big"), HasSubstr("text_config.hidden_size must be an integer"));
  EXPECT_THAT(with("hidden_size", -4), HasSubstr("text_config.hidden_size = -4 is out of range"));
  EXPECT_THAT(with("layer_types", json::array({"sliding_attention"})), HasSubstr("text_config.layer_types must list 6"));
  EXPECT_THAT(with("layer_types", json::array({"a", "b", "c", "d", "e", "f"})), HasSubstr("text_config.layer_types[0]"));
  EXPECT_THAT(with("num_key_value_heads", 3), HasSubstr("not a multiple of its 3 KV heads"));
  EXPECT_THAT(with("num_kv_shared_layers", 6), HasSubstr("text_config.num_kv_shared_layers = 6"));
  EXPECT_THAT(with("enable_moe_block", true), HasSubstr("text_config.num_experts is missing"));
  EXPECT_THAT(with("use_bidirectional_attention", "all"), HasSubstr("not supported"));
  EXPECT_THAT(with("rope_parameters", {{"full_attention", {{"rope_type", "yarn"}}}}),
              HasSubstr("text_config.rope_parameters.full_attention.rope_type 'yarn' is not supported"));
  EXPECT_THAT(with("per_layer_config", {{"9", {{"head_dim", 512}}}}), HasSubstr("per_layer_config key '9'"));
  EXPECT_THAT(with("per_layer_config", {{"2", {{"sliding_window", 4}}}}),
              HasSubstr("per_layer_config.2.sliding_window is not a supported per-layer override"));

  json j = testing::tiny_config(s);
  j["eos_token_id"] = "x";
  EXPECT_THAT(config_error(j), HasSubstr("eos_token_id"));
  j = testing::tiny_config(s);
  j.erase("text_config");
  EXPECT_THAT(config_error(j), HasSubstr("text_config is missing"));
  j = testing::tiny_config(s);
  j["architectures"] = {"LlamaForCausalLM"};
  EXPECT_THAT(config_error(j), HasSubstr("architecture 'LlamaForCausalLM' is not supported"));
  j = testing::tiny_assistant_config(32, true);
  j.erase("backbone_hidden_size");
  EXPECT_THAT(config_error(j), HasSubstr("backbone_hidden_size is missing"));
  j = testing::tiny_assistant_config(32, true);
  j["text_config"]["num_kv_shared_layers"] = 2;
  EXPECT_THAT(config_error(j), HasSubstr("every assistant layer reads the target's KV"));
  // KV sharing needs an earlier owner of the same type.
  s.pattern = "FFSF";
  s.shared = 2;  // layer 2 (sliding) would have no sliding owner before it
  EXPECT_THAT(config_error(testing::tiny_config(s)), HasSubstr("KV-shared layer 2"));
  // from_file prefixes the path.
  try {
    ModelConfig::from_file("/nonexistent/config.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("/nonexistent/config.json"));
  }
}

TEST(ModelConfig, DemoPresetIsTinyButComplete) {
  ModelConfig c = preset_config("demo");
  EXPECT_EQ(appendix_map(c).substr(0, 20), "0:S(d256,kv1,I256) 1");
  EXPECT_EQ(c.hidden_size, 128);
  EXPECT_EQ(c.ple_dim, 16);
  EXPECT_EQ(c.num_kv_shared_layers, 2);
  EXPECT_EQ(c.layers[4].kv_source, 3);
  EXPECT_EQ(c.layers[5].kv_source, 2);
  EXPECT_EQ(c.layers[5].intermediate, 512);
  EXPECT_EQ(c.sliding_window, 64);
  EXPECT_EQ(c.max_position_embeddings, 4096);
  EXPECT_EQ(c.eos_token_ids.size(), 2u);
  EXPECT_GT(c.vocab_size, 256);
}

}  // namespace
}  // namespace gs
