#include "model/dummy_weights.h"

#include <sys/stat.h>

#include <cmath>
#include <vector>

#include "core/error.h"
#include "core/log.h"
#include "model/presets.h"
#include "ops/sampling_rng.h"

namespace gs {

namespace {

class DummyFiller {
 public:
  DummyFiller(Backend& be, uint64_t seed) : be_(be), seed_(seed), dtype_(be.weight_dtype(DType::BF16)) {}

  // Uniform in ±scale, generated on the device.
  Tensor uniform(Shape s, float scale) {
    Tensor t = be_.empty(dtype_, s);
    be_.fill_uniform(t, next_seed(), scale);
    return t;
  }
  Tensor linear(int64_t out, int64_t in) { return uniform({out, in}, 1.f / std::sqrt(float(in))); }

  // 1 ± spread, drawn on the host (these vectors are tiny) and stored as bf16 like a checkpoint's.
  Tensor near_one(int64_t n, float spread = 0.1f) {
    uint64_t seed = next_seed();
    Tensor h = host_tensor(DType::BF16, {n});
    for (int64_t i = 0; i < n; ++i) h.ptr<uint16_t>()[i] = f32_to_bf16(1.f + rng::fill_value(seed, i, spread));
    return be_.upload_weight(h);
  }

  // A random permutation of [0, n) (the centroid head's token ordering).
  Tensor permutation(int64_t n) {
    uint64_t seed = next_seed();
    std::vector<int32_t> p(n);
    for (int64_t i = 0; i < n; ++i) p[i] = int32_t(i);
    for (int64_t i = n - 1; i > 0; --i) std::swap(p[i], p[rng::hash3(seed, 0, i) % uint64_t(i + 1)]);
    Tensor t = be_.empty(DType::I32, {n});
    be_.copy_from_host(t, p.data());
    return t;
  }

 private:
  uint64_t next_seed() { return rng::hash3(seed_, 0x64756d6d79ull /* "dummy" */, counter_++); }

  Backend& be_;
  uint64_t seed_;
  uint64_t counter_ = 0;
  DType dtype_;
};

LayerWeights dummy_layer(DummyFiller& f, const ModelConfig& c, const LayerSpec& s) {
  const int64_t H = c.hidden_size, d = s.head_dim, qd = int64_t(c.num_q_heads) * d, kvd = int64_t(s.num_kv_heads) * d;
  const int64_t I = s.intermediate;
  LayerWeights w;
  w.input_norm = f.near_one(H);
  w.post_attn_norm = f.near_one(H);
  w.pre_ffn_norm = f.near_one(H);
  w.post_ffn_norm = f.near_one(H);
  w.layer_scalar = 1.f;
  int64_t qkv_rows = qd + (s.owns_kv ? (s.k_eq_v ? 1 : 2) * kvd : 0);
  w.qkv = f.linear(qkv_rows, H);
  w.q_norm = f.near_one(d);
  if (s.owns_kv) w.k_norm = f.near_one(d);
  w.o_proj = f.linear(H, qd);
  w.gate_up = f.linear(2 * I, H);
  w.down = f.linear(H, I);
  if (c.ple_dim) {
    w.ple_gate = f.linear(c.ple_dim, H);
    w.ple_proj = f.linear(H, c.ple_dim);
    w.ple_post_norm = f.near_one(H);
  }
  if (c.moe) {
    const int64_t E = c.num_experts, Im = c.moe_intermediate_size;
    w.pre_ffn_norm_2 = f.near_one(H);
    w.post_ffn_norm_1 = f.near_one(H);
    w.post_ffn_norm_2 = f.near_one(H);
    w.router_proj = f.linear(E, H);
    w.router_scale = f.near_one(H);
    w.per_expert_scale = f.near_one(E);
    w.experts_gate_up = f.uniform({E, 2 * Im, H}, 1.f / std::sqrt(float(H)));
    w.experts_down = f.uniform({E, H, Im}, 1.f / std::sqrt(float(Im)));
  }
  return w;
}

VisionLinear dummy_vision_linear(DummyFiller& f, int64_t out, int64_t in) { return {f.linear(out, in), ClipBounds{}}; }

// The tower of the config's shape; clipped linears keep their ±inf defaults (no clipping).
std::shared_ptr<VisionWeights> dummy_vision(DummyFiller& f, const ModelConfig& c) {
  const VisionConfig& v = c.vision;
  const int64_t Hv = v.hidden_size, I = v.intermediate_size, qd = int64_t(v.num_heads) * v.head_dim;
  auto w = std::make_shared<VisionWeights>();
  w->input_proj = f.linear(Hv, v.patch_values());
  w->position_table = f.uniform({2, v.position_embedding_size, Hv}, 0.1f);
  for (int i = 0; i < v.num_layers; ++i) {
    VisionLayerWeights l;
    l.input_norm = f.near_one(Hv);
    l.post_attn_norm = f.near_one(Hv);
    l.pre_ffn_norm = f.near_one(Hv);
    l.post_ffn_norm = f.near_one(Hv);
    l.q = dummy_vision_linear(f, qd, Hv);
    l.k = dummy_vision_linear(f, qd, Hv);
    l.v = dummy_vision_linear(f, qd, Hv);
    l.o = dummy_vision_linear(f, Hv, qd);
    l.q_norm = f.near_one(v.head_dim);
    l.k_norm = f.near_one(v.head_dim);
    l.gate = dummy_vision_linear(f, I, Hv);
    l.up = dummy_vision_linear(f, I, Hv);
    l.down = dummy_vision_linear(f, Hv, I);
    w->layers.push_back(std::move(l));
  }
  if (v.standardize) {
    w->std_bias = f.uniform({Hv}, 0.1f);
    w->std_scale = f.near_one(Hv);
  }
  w->embed_projection = f.linear(c.hidden_size, Hv);
  return w;
}

}  // namespace

ModelWeights make_dummy_weights(const ModelConfig& c, Backend& backend, uint64_t seed, bool vision) {
  DummyFiller f(backend, seed);
  const int64_t H = c.hidden_size;
  ModelWeights w;
  // x0 = embed · sqrt(H) lands in ±1.
  w.embed = f.uniform({c.vocab_size, H}, 1.f / std::sqrt(float(H)));
  w.final_norm = f.near_one(H);
  if (c.ple_dim) {
    const int64_t LP = int64_t(c.num_layers) * c.ple_dim;
    w.ple_table = f.uniform({c.ple_vocab_size, LP}, 1.f / std::sqrt(float(c.ple_dim)));
    w.ple_model_proj = f.linear(LP, H);
    w.ple_proj_norm = f.near_one(c.ple_dim);
  }
  for (const LayerSpec& s : c.layers) w.layers.push_back(dummy_layer(f, c, s));
  if (c.is_assistant) {
    w.pre_projection_embed = f.linear(H, c.backbone_hidden_size);
    w.pre_projection_hidden = f.linear(H, c.backbone_hidden_size);
    w.post_projection = f.linear(c.backbone_hidden_size, H);
    if (c.use_ordered_embeddings) {
      w.centroids = f.linear(c.num_centroids, H);
      w.token_ordering = f.permutation(c.vocab_size);
    }
  }
  if (vision && c.has_vision()) w.vision = dummy_vision(f, c);
  backend.synchronize();
  log::info("dummy weights: {} ({} layers, {:.2f} GB on {}, seed {})", c.architecture, c.num_layers,
            double(w.bytes()) / 1e9, backend.name(), seed);
  return w;
}

std::shared_ptr<const VisionWeights> make_dummy_vision_weights(const ModelConfig& c, Backend& backend, uint64_t seed) {
  GS_CHECK(c.has_vision(), "{} has no vision tower (no vision_config)", c.architecture);
  DummyFiller f(backend, seed);
  auto w = dummy_vision(f, c);
  backend.synchronize();
  return w;
}

ModelConfig resolve_dummy_config(const std::string& model) {
  struct stat st {};
  std::string cfg = model + "/config.json";
  if (::stat(model.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    if (::stat(cfg.c_str(), &st) != 0) throw Error("--model {}: the directory has no config.json", model);
    return ModelConfig::from_file(cfg);
  }
  if (is_preset(model)) return preset_config(model);
  std::string known;
  for (const auto& n : preset_names()) known += (known.empty() ? "" : ", ") + n;
  throw Error("--model {}: neither a model directory nor a preset name (presets: {})", model, known);
}

}  // namespace gs
