#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

#include "checkpoint/checkpoint.h"
#include "checkpoint/safetensors_writer.h"
#include "configs.h"
#include "core/error.h"
#include "fake_backend.h"
#include "model/dummy_weights.h"
#include "model/presets.h"
#include "model/random_checkpoint.h"
#include "model/weight_loader.h"
#include "test_util.h"

namespace gs {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using nlohmann::json;
using testing::FakeBackend;
using testing::TempDir;

std::string bytes_of(const Tensor& t) { return std::string(static_cast<const char*>(t.data), t.nbytes()); }
std::string bytes_of(const TensorRef& t) { return std::string(reinterpret_cast<const char*>(t.data), t.nbytes); }

// Every tensor of ModelWeights with a label, for comparing two sets of weights.
std::vector<std::pair<std::string, const Tensor*>> all_tensors(const ModelWeights& w) {
  std::vector<std::pair<std::string, const Tensor*>> out = {
      {"embed", &w.embed},           {"final_norm", &w.final_norm},         {"ple_table", &w.ple_table},
      {"ple_model_proj", &w.ple_model_proj}, {"ple_proj_norm", &w.ple_proj_norm}, {"pre_projection_embed", &w.pre_projection_embed},
      {"pre_projection_hidden", &w.pre_projection_hidden},
      {"post_projection", &w.post_projection}, {"centroids", &w.centroids},   {"token_ordering", &w.token_ordering}};
  for (size_t i = 0; i < w.layers.size(); ++i) {
    const LayerWeights& l = w.layers[i];
    std::string p = std::to_string(i) + ".";
    for (auto [n, t] : std::initializer_list<std::pair<const char*, const Tensor*>>{
             {"input_norm", &l.input_norm}, {"post_attn_norm", &l.post_attn_norm}, {"pre_ffn_norm", &l.pre_ffn_norm},
             {"post_ffn_norm", &l.post_ffn_norm}, {"qkv", &l.qkv}, {"q_norm", &l.q_norm}, {"k_norm", &l.k_norm},
             {"o_proj", &l.o_proj}, {"gate_up", &l.gate_up}, {"down", &l.down}, {"ple_gate", &l.ple_gate},
             {"ple_proj", &l.ple_proj}, {"ple_post_norm", &l.ple_post_norm}, {"pre_ffn_norm_2", &l.pre_ffn_norm_2},
             {"post_ffn_norm_1", &l.post_ffn_norm_1}, {"post_ffn_norm_2", &l.post_ffn_norm_2},
             {"router_proj", &l.router_proj}, {"router_scale", &l.router_scale},
             {"per_expert_scale", &l.per_expert_scale}, {"experts_gate_up", &l.experts_gate_up},
             {"experts_down", &l.experts_down}})
      out.push_back({p + n, t});
  }
  return out;
}

std::string load_error(const std::string& dir) {
  try {
    auto ckpt = Checkpoint::open(dir);
    ModelConfig cfg = ModelConfig::from_json(ckpt->config_json());
    FakeBackend be;
    load_weights(*ckpt, cfg, be);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// The feature combinations of the released variants, tiny.
std::vector<testing::TinySpec> tiny_variants() {
  std::vector<testing::TinySpec> v(4);
  v[1].ple = 8, v[1].shared = 2, v[1].double_wide = true;       // E2B-like
  v[2].k_eq_v = true, v[2].kv_heads = 2, v[2].global_kv = 1;   // 31B-like
  v[3].moe = true, v[3].k_eq_v = true, v[3].global_kv = 1, v[3].arch = "Gemma4ForCausalLM";  // 26B-like
  return v;
}

TEST(WeightLoader, FusesAndChecksEveryVariant) {
  uint64_t seed = testing::fresh_seed();
  SCOPED_TRACE(seed);
  for (const auto& spec : tiny_variants()) {
    for (DType dt : {DType::BF16, DType::F32}) {
      TempDir dir;
      json cfg_json = testing::tiny_config(spec);
      SCOPED_TRACE(cfg_json.dump());
      ModelConfig cfg = write_random_checkpoint(cfg_json, json(), dir.path(), {seed, dt, size_t(1) << 30});
      auto ckpt = Checkpoint::open(dir.path());
      FakeBackend be;
      ModelWeights w = load_weights(*ckpt, cfg, be);
      ASSERT_EQ(int(w.layers.size()), cfg.num_layers);
      const std::string& P = cfg.weight_prefix;
      EXPECT_EQ(bytes_of(w.embed), bytes_of(ckpt->tensor(P + "embed_tokens.weight")));
      for (int i = 0; i < cfg.num_layers; ++i) {
        const LayerSpec& s = cfg.layers[i];
        const LayerWeights& l = w.layers[i];
        std::string p = P + "layers." + std::to_string(i) + ".";
        std::string qkv = bytes_of(ckpt->tensor(p + "self_attn.q_proj.weight"));
        int64_t rows = int64_t(cfg.num_q_heads) * s.head_dim;
        if (s.owns_kv) {
          qkv += bytes_of(ckpt->tensor(p + "self_attn.k_proj.weight"));
          rows += int64_t(s.num_kv_heads) * s.head_dim;
          if (!s.k_eq_v) {
            qkv += bytes_of(ckpt->tensor(p + "self_attn.v_proj.weight"));
            rows += int64_t(s.num_kv_heads) * s.head_dim;
          }
          EXPECT_TRUE(l.k_norm.defined());
        } else {
          EXPECT_FALSE(l.k_norm.defined());
        }
        EXPECT_EQ(l.qkv.shape, (Shape{rows, cfg.hidden_size})) << i;
        EXPECT_EQ(bytes_of(l.qkv), qkv) << i;
        EXPECT_EQ(bytes_of(l.gate_up), bytes_of(ckpt->tensor(p + "mlp.gate_proj.weight")) +
                                           bytes_of(ckpt->tensor(p + "mlp.up_proj.weight")));
        EXPECT_EQ(l.gate_up.shape, (Shape{2 * s.intermediate, cfg.hidden_size}));
        EXPECT_EQ(bytes_of(l.input_norm), bytes_of(ckpt->tensor(p + "input_layernorm.weight")));
        float scalar = 0;
        convert_to_f32(dt, ckpt->tensor(p + "layer_scalar").data, &scalar, 1);
        EXPECT_EQ(l.layer_scalar, scalar);
        EXPECT_NE(l.layer_scalar, 1.f);  // randomised near 1, so a loader ignoring it is caught
        EXPECT_EQ(l.ple_gate.defined(), cfg.ple_dim > 0);
        EXPECT_EQ(l.experts_gate_up.defined(), cfg.moe);
        if (cfg.moe) {
          EXPECT_EQ(bytes_of(l.experts_down), bytes_of(ckpt->tensor(p + "experts.down_proj")));
          EXPECT_EQ(l.experts_gate_up.shape, (Shape{4, 32, cfg.hidden_size}));
        }
      }
      size_t total = 0;
      for (auto& [n, t] : all_tensors(w)) total += t->defined() ? t->nbytes() : 0;
      EXPECT_EQ(w.bytes(), total);
      EXPECT_EQ(w.bytes(), ckpt->loaded_bytes() - cfg.num_layers * dtype_size(dt));  // layer_scalars are floats
    }
  }
}

TEST(WeightLoader, ShardedEqualsSingleFileAndReportsProgress) {
  testing::TinySpec spec = tiny_variants()[1];
  TempDir one, many;
  uint64_t seed = testing::fresh_seed();
  write_random_checkpoint(testing::tiny_config(spec), json(), one.path(), {seed, DType::BF16, size_t(1) << 30});
  ModelConfig cfg =
      write_random_checkpoint(testing::tiny_config(spec), json(), many.path(), {seed, DType::BF16, 40000});
  auto a = Checkpoint::open(one.path());
  auto b = Checkpoint::open(many.path());
  ASSERT_EQ(a->files().size(), 1u);
  ASSERT_GT(b->files().size(), 3u);
  FakeBackend be;
  size_t last_done = 0, calls = 0;
  ModelWeights wa = load_weights(*a, cfg, be);
  ModelWeights wb = load_weights(*b, cfg, be, [&](size_t done, size_t total) {
    EXPECT_GE(done, last_done);
    EXPECT_LE(done, total);
    last_done = done;
    ++calls;
  });
  EXPECT_GT(calls, 10u);
  auto ta = all_tensors(wa), tb = all_tensors(wb);
  for (size_t i = 0; i < ta.size(); ++i) {
    ASSERT_EQ(ta[i].second->defined(), tb[i].second->defined()) << ta[i].first;
    if (ta[i].second->defined()) EXPECT_EQ(bytes_of(*ta[i].second), bytes_of(*tb[i].second)) << ta[i].first;
  }
}

// Rewrites dir/model.safetensors with `edit` applied to the tensor list (values from the original).
void rewrite(const TempDir& dir, const std::function<void(std::vector<TensorDecl>&)>& edit) {
  std::map<std::string, std::string> old;
  std::vector<TensorDecl> decls;
  {
    SafetensorsFile f(dir / "model.safetensors");
    for (const auto& t : f.tensors()) {
      old[t.name] = std::string(reinterpret_cast<const char*>(f.data(t)), t.nbytes);
      decls.push_back({t.name, t.dtype, t.shape});
    }
  }
  edit(decls);
  write_safetensors(dir / "model.safetensors", decls, [&](const TensorDecl& d, uint8_t* dst) {
    const std::string& src = old[d.name];
    std::memset(dst, 0, d.nbytes());
    std::memcpy(dst, src.data(), std::min(src.size(), d.nbytes()));
  });
}

TEST(WeightLoader, ClearErrorsForMissingMisshapenOrMistypedTensors) {
  const std::string q = "model.language_model.layers.1.self_attn.q_proj.weight";
  auto fresh = [&](const TempDir& dir) {
    write_random_checkpoint(testing::tiny_config(testing::TinySpec{}), json(), dir.path(), {});
  };
  {
    TempDir dir;
    fresh(dir);
    EXPECT_EQ(load_error(dir.path()), "(no error)");
    rewrite(dir, [&](auto& d) { std::erase_if(d, [&](const TensorDecl& t) { return t.name == q; }); });
    EXPECT_THAT(load_error(dir.path()), AllOf(HasSubstr("'" + q + "'"), HasSubstr("not found"), HasSubstr(dir.path())));
  }
  {
    TempDir dir;
    fresh(dir);
    rewrite(dir, [&](auto& d) {
      for (auto& t : d)
        if (t.name == q) t.shape = {512, 31};
    });
    EXPECT_THAT(load_error(dir.path()), AllOf(HasSubstr("'" + q + "'"), HasSubstr("model.safetensors"),
                                              HasSubstr("shape [512, 31]"), HasSubstr("implies [512, 32]")));
  }
  {
    TempDir dir;
    fresh(dir);
    const std::string norm = "model.language_model.norm.weight";
    rewrite(dir, [&](auto& d) {
      for (auto& t : d)
        if (t.name == norm) t.dtype = DType::I32;  // right shape, integer type
    });
    EXPECT_THAT(load_error(dir.path()), AllOf(HasSubstr("'" + norm + "'"), HasSubstr("model.safetensors"),
                                              HasSubstr("dtype i32"), HasSubstr("expected a float type")));
  }
  {
    TempDir dir;
    fresh(dir);
    std::string bytes = testing::read_file(dir / "model.safetensors");
    testing::write_file(dir / "model.safetensors", bytes.substr(0, bytes.size() / 2));
    EXPECT_THAT(load_error(dir.path()), AllOf(HasSubstr("model.safetensors"), HasSubstr("truncated")));
  }
}

TEST(WeightLoader, IgnoresKvProjectionsOfSharedLayers) {
  testing::TinySpec spec = tiny_variants()[1];  // layers 4, 5 share KV
  TempDir dir;
  ModelConfig cfg = write_random_checkpoint(testing::tiny_config(spec), json(), dir.path(), {});
  rewrite(dir, [&](auto& d) {  // some published checkpoints still carry them
    d.push_back({"model.language_model.layers.4.self_attn.k_proj.weight", DType::BF16, {256, 32}});
    d.push_back({"model.language_model.layers.5.self_attn.v_proj.weight", DType::BF16, {7}});  // even misshapen
  });
  auto ckpt = Checkpoint::open(dir.path());
  FakeBackend be;
  ModelWeights w = load_weights(*ckpt, cfg, be);
  EXPECT_EQ(w.layers[4].qkv.shape, (Shape{2 * 256, 32}));
  EXPECT_EQ(w.layers[5].qkv.shape, (Shape{2 * 512, 32}));
}

TEST(WeightLoader, AssistantWithCentroidHead) {
  TempDir dir;
  ModelConfig cfg = write_random_checkpoint(testing::tiny_assistant_config(32, true), json(), dir.path(), {});
  auto ckpt = Checkpoint::open(dir.path());
  FakeBackend be;
  ModelWeights w = load_weights(*ckpt, cfg, be);
  // pre_projection [16, 64] arrives as its two column halves, byte for byte.
  ASSERT_EQ(w.pre_projection_embed.shape, (Shape{16, 32}));
  ASSERT_EQ(w.pre_projection_hidden.shape, (Shape{16, 32}));
  const TensorRef& pre = ckpt->tensor("pre_projection.weight");
  const size_t half = 32 * dtype_size(pre.dtype);
  ASSERT_EQ(w.pre_projection_embed.dtype, pre.dtype);
  for (int r = 0; r < 16; ++r) {
    const std::string row(reinterpret_cast<const char*>(pre.data) + r * 2 * half, 2 * half);
    EXPECT_EQ(bytes_of(w.pre_projection_embed).substr(r * half, half), row.substr(0, half)) << "row " << r;
    EXPECT_EQ(bytes_of(w.pre_projection_hidden).substr(r * half, half), row.substr(half)) << "row " << r;
  }
  EXPECT_EQ(w.post_projection.shape, (Shape{32, 16}));
  EXPECT_EQ(w.centroids.shape, (Shape{8, 16}));
  ASSERT_EQ(w.token_ordering.dtype, DType::I32);
  const TensorRef& ord = ckpt->tensor("masked_embedding.token_ordering");
  ASSERT_EQ(ord.dtype, DType::I64);
  std::vector<bool> seen(64);
  for (int i = 0; i < 64; ++i) {
    int64_t v;
    std::memcpy(&v, ord.data + 8 * i, 8);
    EXPECT_EQ(w.token_ordering.ptr<int32_t>()[i], v);
    seen[v] = true;
  }
  EXPECT_EQ(std::count(seen.begin(), seen.end(), true), 64);  // a permutation
  for (int i = 0; i < cfg.num_layers; ++i) {  // Q only: the assistant reads the target's KV
    EXPECT_EQ(w.layers[i].qkv.shape, (Shape{2 * cfg.layers[i].head_dim, 16}));
    EXPECT_FALSE(w.layers[i].k_norm.defined());
  }

  {  // an ordering entry outside the vocabulary
    std::string bytes = testing::read_file(dir / "model.safetensors");
    auto f = std::make_unique<SafetensorsFile>(dir / "model.safetensors");
    size_t off = f->find("masked_embedding.token_ordering")->offset;
    f.reset();
    int64_t bad = 999;
    std::memcpy(bytes.data() + off + 8 * 3, &bad, 8);
    testing::write_file(dir / "model.safetensors", bytes);
  }
  EXPECT_THAT(load_error(dir.path()), AllOf(HasSubstr("masked_embedding.token_ordering"), HasSubstr("entry 3 = 999")));
}

TEST(WeightLoader, LoadsTransformersGoldenCheckpoints) {
  for (const char* combo : {"dense", "e2b_like", "k_eq_v", "moe", "multimodal", "f16_nocap"}) {
    SCOPED_TRACE(combo);
    auto ckpt = Checkpoint::open(std::string(GS_SOURCE_DIR) + "/fixtures/golden/" + combo);
    ModelConfig cfg = ModelConfig::from_json(ckpt->config_json());
    FakeBackend be;
    ModelWeights w = load_weights(*ckpt, cfg, be);
    EXPECT_EQ(int(w.layers.size()), cfg.num_layers);
    if (std::string(combo) == "multimodal") {
      EXPECT_GT(ckpt->skipped_tensors(), 0);
      EXPECT_GT(ckpt->skipped_bytes(), 0u);
    }
  }
}

TEST(DummyWeights, SameShapesAsALoadedCheckpoint) {
  for (const auto& spec : tiny_variants()) {
    TempDir dir;
    json cfg_json = testing::tiny_config(spec);
    SCOPED_TRACE(cfg_json.dump());
    ModelConfig cfg = write_random_checkpoint(cfg_json, json(), dir.path(), {});
    auto ckpt = Checkpoint::open(dir.path());
    FakeBackend be;
    ModelWeights loaded = load_weights(*ckpt, cfg, be);
    ModelWeights dummy = make_dummy_weights(cfg, be, 7);
    ModelWeights again = make_dummy_weights(cfg, be, 7);
    ModelWeights other = make_dummy_weights(cfg, be, 8);
    auto a = all_tensors(loaded), b = all_tensors(dummy), c = all_tensors(again), d = all_tensors(other);
    for (size_t i = 0; i < a.size(); ++i) {
      SCOPED_TRACE(a[i].first);
      ASSERT_EQ(a[i].second->defined(), b[i].second->defined());
      if (!a[i].second->defined()) continue;
      EXPECT_EQ(a[i].second->shape, b[i].second->shape);
      EXPECT_EQ(bytes_of(*b[i].second), bytes_of(*c[i].second));  // deterministic in the seed
      if (b[i].second->numel() > 16) EXPECT_NE(bytes_of(*b[i].second), bytes_of(*d[i].second));
      if (b[i].second->dtype == DType::BF16 || b[i].second->dtype == DType::F32) {
        std::vector<float> f(size_t(b[i].second->numel()));
        convert_to_f32(b[i].second->dtype, b[i].second->data, f.data(), f.size());
        for (float x : f) ASSERT_TRUE(std::isfinite(x) && std::fabs(x) <= 1.5f) << x;
      }
    }
    EXPECT_EQ(dummy.bytes(), loaded.bytes());
    EXPECT_GT(be.uniform_fills, 0);
  }
}

TEST(DummyWeights, ResolvesDirectoriesAndPresets) {
  EXPECT_EQ(resolve_dummy_config("31b").num_layers, 60);
  TempDir dir;
  testing::write_file(dir / "config.json", testing::tiny_config(testing::TinySpec{}).dump());
  EXPECT_EQ(resolve_dummy_config(dir.path()).num_layers, 6);
  try {
    resolve_dummy_config("no-such-model");
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), AllOf(HasSubstr("no-such-model"), HasSubstr("e2b")));
  }
}

}  // namespace
}  // namespace gs

namespace gs {
namespace {

std::string vision_load_error(const std::string& dir) {
  try {
    auto ckpt = Checkpoint::open(dir, CheckpointOptions{true});
    ModelConfig cfg = ModelConfig::from_json(ckpt->config_json());
    FakeBackend be;
    load_weights(*ckpt, cfg, be);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// The vision tower loads only when asked (--enable-multimodal), has the shapes dummy weights give
// it, and a corrupt tower tensor is an error naming the tensor and the problem.
TEST(WeightLoader, VisionTowerOnlyWhenAskedAndCorruptTensorsNamed) {
  TempDir dir;
  ModelConfig cfg = write_random_checkpoint(preset_config_json("demo"), json(), dir.path(), {});
  ASSERT_TRUE(cfg.has_vision());
  ASSERT_TRUE(cfg.vision.use_clipped_linears);
  FakeBackend be;
  {
    auto text_only = Checkpoint::open(dir.path());
    EXPECT_FALSE(load_weights(*text_only, cfg, be).vision);
  }
  auto ckpt = Checkpoint::open(dir.path(), CheckpointOptions{true});
  ModelWeights w = load_weights(*ckpt, cfg, be);
  ASSERT_TRUE(w.vision);
  ASSERT_EQ(int(w.vision->layers.size()), cfg.vision.num_layers);
  EXPECT_EQ(w.vision->layers[0].q.clip.input_min, -100.f);  // the demo checkpoint's bounds
  EXPECT_EQ(w.vision->layers[1].down.clip.output_max, 100.f);
  ModelWeights dummy = make_dummy_weights(cfg, be, 3, /*vision=*/true);
  ASSERT_TRUE(dummy.vision);
  EXPECT_EQ(dummy.vision->bytes(), w.vision->bytes());
  EXPECT_EQ(dummy.vision->position_table.shape, w.vision->position_table.shape);
  EXPECT_FALSE(make_dummy_weights(cfg, be, 3).vision);

  const std::string gate = "model.vision_tower.encoder.layers.1.mlp.gate_proj.linear.weight";
  rewrite(dir, [&](auto& d) {
    for (auto& t : d)
      if (t.name == gate) t.shape = {64, 31};
  });
  EXPECT_THAT(vision_load_error(dir.path()),
              AllOf(HasSubstr("'" + gate + "'"), HasSubstr("shape [64, 31]"), HasSubstr("implies [64, 32]")));
  const std::string bound = "model.vision_tower.encoder.layers.0.self_attn.k_proj.output_max";
  write_random_checkpoint(preset_config_json("demo"), json(), dir.path(), {});
  rewrite(dir, [&](auto& d) { std::erase_if(d, [&](const TensorDecl& t) { return t.name == bound; }); });
  EXPECT_THAT(vision_load_error(dir.path()), AllOf(HasSubstr("'" + bound + "'"), HasSubstr("use_clipped_linears")));
}

}  // namespace
}  // namespace gs
