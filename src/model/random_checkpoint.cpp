#include "model/random_checkpoint.h"

#include <cmath>
#include <filesystem>
#include <fstream>

#include "checkpoint/checkpoint.h"
#include "core/error.h"
#include "core/log.h"
#include "ops/sampling_rng.h"

namespace gs {

namespace fs = std::filesystem;
using nlohmann::json;

std::vector<CheckpointTensor> checkpoint_tensors(const ModelConfig& c, DType dt) {
  std::vector<CheckpointTensor> out;
  auto add = [&](std::string name, std::vector<int64_t> shape, WeightInit init, float scale, DType t) {
    out.push_back({TensorDecl{std::move(name), t, std::move(shape)}, init, scale});
  };
  auto linear = [&](std::string name, int64_t rows, int64_t cols) {
    add(std::move(name), {rows, cols}, WeightInit::Uniform, 1.f / std::sqrt(float(cols)), dt);
  };
  auto norm = [&](std::string name, int64_t n) { add(std::move(name), {n}, WeightInit::NearOne, 0.25f, dt); };

  const std::string& P = c.weight_prefix;
  const int64_t H = c.hidden_size;
  add(P + "embed_tokens.weight", {c.vocab_size, H}, WeightInit::Uniform, 1.f / std::sqrt(float(H)), dt);
  norm(P + "norm.weight", H);
  if (c.ple_dim) {
    const int64_t LP = int64_t(c.num_layers) * c.ple_dim;
    add(P + "embed_tokens_per_layer.weight", {c.ple_vocab_size, LP}, WeightInit::Uniform,
        1.f / std::sqrt(float(c.ple_dim)), dt);
    linear(P + "per_layer_model_projection.weight", LP, H);
    norm(P + "per_layer_projection_norm.weight", c.ple_dim);
  }
  for (int i = 0; i < c.num_layers; ++i) {
    const LayerSpec& s = c.layers[i];
    const std::string p = P + "layers." + std::to_string(i) + ".";
    const int64_t d = s.head_dim, qd = int64_t(c.num_q_heads) * d, kvd = int64_t(s.num_kv_heads) * d;
    for (const char* n : {"input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                          "post_feedforward_layernorm"})
      norm(p + n + ".weight", H);
    add(p + "layer_scalar", {1}, WeightInit::NearOne, 0.1f, dt);
    linear(p + "self_attn.q_proj.weight", qd, H);
    norm(p + "self_attn.q_norm.weight", d);
    if (s.owns_kv) {
      linear(p + "self_attn.k_proj.weight", kvd, H);
      if (!s.k_eq_v) linear(p + "self_attn.v_proj.weight", kvd, H);
      norm(p + "self_attn.k_norm.weight", d);
    }
    linear(p + "self_attn.o_proj.weight", H, qd);
    linear(p + "mlp.gate_proj.weight", s.intermediate, H);
    linear(p + "mlp.up_proj.weight", s.intermediate, H);
    linear(p + "mlp.down_proj.weight", H, s.intermediate);
    if (c.ple_dim) {
      linear(p + "per_layer_input_gate.weight", c.ple_dim, H);
      linear(p + "per_layer_projection.weight", H, c.ple_dim);
      norm(p + "post_per_layer_input_norm.weight", H);
    }
    if (c.moe) {
      const int64_t E = c.num_experts, Im = c.moe_intermediate_size;
      norm(p + "pre_feedforward_layernorm_2.weight", H);
      norm(p + "post_feedforward_layernorm_1.weight", H);
      norm(p + "post_feedforward_layernorm_2.weight", H);
      linear(p + "router.proj.weight", E, H);
      norm(p + "router.scale", H);
      norm(p + "router.per_expert_scale", E);
      add(p + "experts.gate_up_proj", {E, 2 * Im, H}, WeightInit::Uniform, 1.f / std::sqrt(float(H)), dt);
      add(p + "experts.down_proj", {E, H, Im}, WeightInit::Uniform, 1.f / std::sqrt(float(Im)), dt);
    }
  }
  if (c.has_vision()) {
    const VisionConfig& v = c.vision;
    const int64_t Hv = v.hidden_size, I = v.intermediate_size, qd = int64_t(v.num_heads) * v.head_dim;
    const std::string V = "model.vision_tower.";
    linear(V + "patch_embedder.input_proj.weight", Hv, v.patch_values());
    add(V + "patch_embedder.position_embedding_table", {2, v.position_embedding_size, Hv}, WeightInit::Uniform, 0.1f,
        dt);
    auto clipped = [&](const std::string& p, int64_t rows, int64_t cols) {
      linear(p + ".linear.weight", rows, cols);
      if (!v.use_clipped_linears) return;
      // Bounds far outside the activations' range: present as in a real checkpoint, clipping nothing.
      for (const char* n : {".input_min", ".output_min"}) add(p + n, {}, WeightInit::Constant, -100.f, dt);
      for (const char* n : {".input_max", ".output_max"}) add(p + n, {}, WeightInit::Constant, 100.f, dt);
    };
    for (int i = 0; i < v.num_layers; ++i) {
      const std::string p = V + "encoder.layers." + std::to_string(i) + ".";
      for (const char* n : {"input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                            "post_feedforward_layernorm"})
        norm(p + n + ".weight", Hv);
      for (const char* n : {"q_proj", "k_proj", "v_proj"}) clipped(p + "self_attn." + n, qd, Hv);
      clipped(p + "self_attn.o_proj", Hv, qd);
      norm(p + "self_attn.q_norm.weight", v.head_dim);
      norm(p + "self_attn.k_norm.weight", v.head_dim);
      clipped(p + "mlp.gate_proj", I, Hv);
      clipped(p + "mlp.up_proj", I, Hv);
      clipped(p + "mlp.down_proj", Hv, I);
    }
    if (v.standardize) {
      add(V + "std_bias", {Hv}, WeightInit::Uniform, 0.1f, dt);
      norm(V + "std_scale", Hv);
    }
    linear("model.embed_vision.embedding_projection.weight", H, Hv);
  }
  if (c.is_assistant) {
    const int64_t Ht = c.backbone_hidden_size;
    linear("pre_projection.weight", H, 2 * Ht);
    linear("post_projection.weight", Ht, H);
    if (c.use_ordered_embeddings) {
      linear("masked_embedding.centroids.weight", c.num_centroids, H);
      add("masked_embedding.token_ordering", {c.vocab_size}, WeightInit::Permutation, 0.f, DType::I64);
    }
  }
  return out;
}

namespace {

uint64_t name_hash(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
  for (unsigned char ch : s) h = (h ^ ch) * 0x100000001b3ull;
  return h;
}

// Host values of one tensor: a pure function of (seed, name), so shards and orderings never change them.
void fill_tensor(const CheckpointTensor& t, uint64_t seed, uint8_t* dst) {
  const uint64_t s = rng::hash3(seed, name_hash(t.decl.name), 0);
  const size_t n = t.decl.nbytes() / dtype_size(t.decl.dtype);
  if (t.init == WeightInit::Permutation) {
    auto* p = reinterpret_cast<int64_t*>(dst);
    for (size_t i = 0; i < n; ++i) p[i] = int64_t(i);
    for (size_t i = n - 1; n > 1 && i > 0; --i) std::swap(p[i], p[rng::hash3(s, 1, i) % (i + 1)]);
    return;
  }
  const bool near_one = t.init == WeightInit::NearOne;
  if (t.init == WeightInit::Constant) {
    std::vector<float> v(n, t.scale);
    convert_from_f32(t.decl.dtype, v.data(), dst, n);
    return;
  }
  constexpr size_t kBlock = 1 << 16;
  std::vector<float> buf(std::min(n, kBlock));
  for (size_t i0 = 0; i0 < n; i0 += kBlock) {
    size_t m = std::min(kBlock, n - i0);
    for (size_t i = 0; i < m; ++i) {
      float u = rng::fill_value(s, i0 + i, 1.f);
      // Near-one values keep at least scale/4 away from 1, so that even after rounding to bf16 no
      // norm weight or layer scalar is exactly 1 (a loader that drops one is then always caught).
      buf[i] = near_one ? 1.f + t.scale * (u >= 0 ? 0.25f + 0.75f * u : -0.25f + 0.75f * u) : u * t.scale;
    }
    convert_from_f32(t.decl.dtype, buf.data(), dst + i0 * dtype_size(t.decl.dtype), m);
  }
}

}  // namespace

void write_text_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  if (!f) throw Error("cannot write {}", path);
}

ModelConfig write_random_checkpoint(const json& config, const json& generation, const std::string& dir,
                                    const RandomCheckpointOptions& opts) {
  GS_CHECK(opts.dtype == DType::BF16 || opts.dtype == DType::F32,
           "random checkpoints are bf16 or f32, not {}", dtype_name(opts.dtype));
  ModelConfig cfg = ModelConfig::from_json(config);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error("cannot create {}: {}", dir, ec.message());
  write_text_file(dir + "/config.json", config.dump(2) + "\n");
  if (!generation.is_null()) write_text_file(dir + "/generation_config.json", generation.dump(2) + "\n");

  std::vector<CheckpointTensor> tensors = checkpoint_tensors(cfg, opts.dtype);
  std::vector<TensorDecl> decls;
  std::map<std::string, const CheckpointTensor*> by_name;
  for (const auto& t : tensors) {
    decls.push_back(t.decl);
    by_name[t.decl.name] = &t;
  }
  size_t total = 0, done = 0;
  for (const auto& d : decls) total += d.nbytes();
  const bool report = total > (size_t(1) << 30);
  auto fill = [&](const TensorDecl& d, uint8_t* dst) {
    fill_tensor(*by_name.at(d.name), opts.seed, dst);
    done += d.nbytes();
    if (report) std::fprintf(stderr, "\rwriting %s: %.1f / %.1f GB", dir.c_str(), double(done) / 1e9, double(total) / 1e9);
  };
  write_sharded_safetensors(dir, decls, fill, opts.max_shard_bytes);
  if (report) std::fputc('\n', stderr);
  return cfg;
}

}  // namespace gs
