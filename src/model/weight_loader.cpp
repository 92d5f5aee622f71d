#include "model/weight_loader.h"

#include <unistd.h>

#include <cstdio>
#include <cmath>
#include <cstring>
#include <memory>
#include <set>
#include <tuple>
#include <utility>

#include "core/error.h"
#include "core/log.h"
#include "model/tensor_shard.h"

namespace gs {

namespace {

bool is_float(DType t) { return t == DType::BF16 || t == DType::F16 || t == DType::F32; }

Shape to_shape(const std::vector<int64_t>& v) {
  Shape s;
  for (int64_t d : v) s.d[s.ndim++] = d;
  return s;
}

class Loader {
 public:
  Loader(const Checkpoint& ckpt, const ModelConfig& cfg, Backend& be, const LoadProgress& progress)
      : ckpt_(ckpt), cfg_(cfg), be_(be), progress_(progress), total_(ckpt.loaded_bytes()) {}

  // The checked checkpoint tensor `name` (prefix included) of the given shape and a float dtype.
  const TensorRef& get(const std::string& name, Shape expect) {
    const TensorRef& t = ckpt_.tensor(name);
    Shape got;
    if (t.shape.size() <= got.d.size()) got = to_shape(t.shape);
    if (t.shape.size() > got.d.size() || !(got == expect))
      throw Error("tensor '{}' in {} has shape {}, but the config ({}) implies {}", name, *t.file, shape_str(t.shape),
                  ckpt_.config_path(), expect.str());
    if (!is_float(t.dtype))
      throw Error("tensor '{}' in {} has dtype {}, expected a float type (bf16, f16 or f32)", name, *t.file,
                  dtype_name(t.dtype));
    if (used_.insert(name).second) done_ += t.nbytes;
    if (progress_) progress_(done_, total_);
    return t;
  }

  // A host tensor over the mapped bytes (copied only when the mapping is misaligned for the dtype).
  static Tensor host_view(const TensorRef& t) {
    Tensor v = borrow_host(const_cast<uint8_t*>(t.data), t.dtype, to_shape(t.shape));
    if (reinterpret_cast<uintptr_t>(t.data) % dtype_size(t.dtype) == 0) return v;
    Tensor c = host_tensor(t.dtype, v.shape);
    std::memcpy(c.data, t.data, t.nbytes);
    return c;
  }

  Tensor weight(const std::string& name, Shape expect) { return be_.upload_weight(host_view(get(name, expect))); }

  // One weight from slices of checkpoint tensors (tensor parallelism: this rank's rows or columns)
  // joined along dimension `cat_dim`: q|k|v and gate|up fuse this way at every TP size. Mixed
  // dtypes meet in f32.
  Tensor sharded(const std::vector<TensorPart>& parts, int cat_dim = 0) {
    std::vector<Tensor> pieces;
    bool same = true;
    for (const TensorPart& p : parts) {
      pieces.push_back(cut_host(host_view(get(p.name, p.shape)), p.dim, p.start, p.len));
      same &= pieces.back().dtype == pieces[0].dtype;
    }
    if (pieces.size() == 1) return be_.upload_weight(pieces[0]);
    if (!same)
      for (Tensor& t : pieces) {
        if (t.dtype == DType::F32) continue;
        Tensor f = host_tensor(DType::F32, t.shape);
        convert_to_f32(t.dtype, t.data, f.ptr<float>(), size_t(t.numel()));
        t = f;
      }
    return be_.upload_weight(concat_host(pieces, cat_dim));
  }

  // Rows [start, start + len) of a 2-D weight, followed by zero rows up to `rows` in all.
  Tensor padded_rows(const std::string& name, Shape expect, int64_t start, int64_t len, int64_t rows) {
    const Tensor whole = host_view(get(name, expect));
    if (len == rows) return be_.upload_weight(cut_host(whole, 0, start, len));
    Tensor out = host_tensor(whole.dtype, {rows, expect[1]});
    const size_t row_bytes = size_t(expect[1]) * dtype_size(whole.dtype);
    std::memset(out.data, 0, size_t(rows) * row_bytes);
    if (len > 0)
      std::memcpy(out.data, static_cast<const uint8_t*>(whole.data) + size_t(start) * row_bytes, size_t(len) * row_bytes);
    return be_.upload_weight(out);
  }

  // The left and right column halves of a [rows, 2·c] weight as two [rows, c] weights.
  std::pair<Tensor, Tensor> column_halves(const std::string& name, Shape expect) {
    const Tensor whole = host_view(get(name, expect));
    const int64_t rows = expect[0], c = expect[1] / 2;
    const size_t row_bytes = size_t(c) * dtype_size(whole.dtype);
    Tensor left = host_tensor(whole.dtype, {rows, c}), right = host_tensor(whole.dtype, {rows, c});
    for (int64_t r = 0; r < rows; ++r) {
      const uint8_t* src = static_cast<const uint8_t*>(whole.data) + size_t(r) * 2 * row_bytes;
      std::memcpy(left.ptr<uint8_t>() + size_t(r) * row_bytes, src, row_bytes);
      std::memcpy(right.ptr<uint8_t>() + size_t(r) * row_bytes, src + row_bytes, row_bytes);
    }
    return {be_.upload_weight(left), be_.upload_weight(right)};
  }

  float scalar(const std::string& name) {
    Tensor h = host_view(get(name, {1}));
    float v = 0;
    convert_to_f32(h.dtype, h.data, &v, 1);
    return v;
  }

  Tensor token_ordering(const std::string& name, int64_t vocab) {
    const TensorRef& t = ckpt_.tensor(name);
    if (t.dtype != DType::I64 && t.dtype != DType::I32)
      throw Error("tensor '{}' in {} has dtype {}, expected i64 (or i32)", name, *t.file, dtype_name(t.dtype));
    if (t.shape.size() != 1 || t.shape[0] != vocab)
      throw Error("tensor '{}' in {} has shape {}, but the config implies [{}]", name, *t.file, shape_str(t.shape),
                  vocab);
    used_.insert(name);
    Tensor out = host_tensor(DType::I32, {vocab});
    for (int64_t i = 0; i < vocab; ++i) {
      int64_t v;
      if (t.dtype == DType::I64) std::memcpy(&v, t.data + 8 * i, 8);
      else {
        int32_t v32;
        std::memcpy(&v32, t.data + 4 * i, 4);
        v = v32;
      }
      if (v < 0 || v >= vocab)
        throw Error("tensor '{}' in {}: entry {} = {} is not a token id below {}", name, *t.file, i, v, vocab);
      out.ptr<int32_t>()[i] = int32_t(v);
    }
    Tensor dev = be_.empty(DType::I32, {vocab});
    be_.copy_from_host(dev, out.data);
    return dev;
  }

  void warn_unused() const {
    std::vector<std::string> unused;
    const std::string kv_marks[] = {".self_attn.k_proj.", ".self_attn.v_proj.", ".self_attn.k_norm."};
    for (const auto& [name, t] : ckpt_.tensors()) {
      if (used_.count(name)) continue;
      bool shared_kv = false;  // K/V of KV-shared layers: present in some checkpoints, never used
      for (const auto& m : kv_marks) shared_kv |= name.find(m) != std::string::npos;
      if (!shared_kv) unused.push_back(name);
    }
    if (unused.empty()) return;
    std::string list;
    for (size_t i = 0; i < unused.size() && i < 5; ++i) list += (i ? ", " : "") + unused[i];
    log::warn("{}: {} tensors not used by the model: {}{}", ckpt_.dir(), unused.size(), list,
              unused.size() > 5 ? ", ..." : "");
  }

  const Checkpoint& ckpt_;
  const ModelConfig& cfg_;
  Backend& be_;
  LoadProgress progress_;
  size_t total_, done_ = 0;
  std::set<std::string> used_;
};

LayerWeights load_layer(Loader& ld, const ModelConfig& c, int i, TpShard sh) {
  const LayerSpec& s = c.layers[i];
  const std::string p = c.weight_prefix + "layers." + std::to_string(i) + ".";
  const int64_t H = c.hidden_size, d = s.head_dim, qd = int64_t(c.num_q_heads) * d, kvd = int64_t(s.num_kv_heads) * d;
  const int64_t I = s.intermediate, N = sh.size, r = sh.rank;
  // This rank's slices (the whole tensors at N = 1): q heads and MLP width split evenly, KV heads
  // split or, when fewer than the ranks, the one this rank's q heads read (tensor_parallel.h).
  const int64_t qs = qd / N, is = I / N;
  const int64_t kvs = s.num_kv_heads >= N ? kvd / N : d, kv0 = int64_t(first_kv_head(c, i, sh)) * d;
  LayerWeights w;
  w.input_norm = ld.weight(p + "input_layernorm.weight", {H});
  w.post_attn_norm = ld.weight(p + "post_attention_layernorm.weight", {H});
  w.pre_ffn_norm = ld.weight(p + "pre_feedforward_layernorm.weight", {H});
  w.post_ffn_norm = ld.weight(p + "post_feedforward_layernorm.weight", {H});
  w.layer_scalar = ld.scalar(p + "layer_scalar");

  std::vector<TensorPart> qkv = {{p + "self_attn.q_proj.weight", {qd, H}, 0, r * qs, qs}};
  if (s.owns_kv) {
    qkv.push_back({p + "self_attn.k_proj.weight", {kvd, H}, 0, kv0, kvs});
    if (!s.k_eq_v) qkv.push_back({p + "self_attn.v_proj.weight", {kvd, H}, 0, kv0, kvs});
    w.k_norm = ld.weight(p + "self_attn.k_norm.weight", {d});
  }
  w.qkv = ld.sharded(qkv);
  w.q_norm = ld.weight(p + "self_attn.q_norm.weight", {d});
  w.o_proj = ld.sharded({{p + "self_attn.o_proj.weight", {H, qd}, 1, r * qs, qs}});
  w.gate_up = ld.sharded({{p + "mlp.gate_proj.weight", {I, H}, 0, r * is, is},
                          {p + "mlp.up_proj.weight", {I, H}, 0, r * is, is}});
  w.down = ld.sharded({{p + "mlp.down_proj.weight", {H, I}, 1, r * is, is}});

  if (c.ple_dim) {
    const int64_t P = c.ple_dim;
    w.ple_gate = ld.weight(p + "per_layer_input_gate.weight", {P, H});
    w.ple_proj = ld.weight(p + "per_layer_projection.weight", {H, P});
    w.ple_post_norm = ld.weight(p + "post_per_layer_input_norm.weight", {H});
  }
  if (c.moe) {
    const int64_t E = c.num_experts, Im = c.moe_intermediate_size, ms = Im / N;
    w.pre_ffn_norm_2 = ld.weight(p + "pre_feedforward_layernorm_2.weight", {H});
    w.post_ffn_norm_1 = ld.weight(p + "post_feedforward_layernorm_1.weight", {H});
    w.post_ffn_norm_2 = ld.weight(p + "post_feedforward_layernorm_2.weight", {H});
    w.router_proj = ld.weight(p + "router.proj.weight", {E, H});
    w.router_scale = ld.weight(p + "router.scale", {H});
    w.per_expert_scale = ld.weight(p + "router.per_expert_scale", {E});
    const std::string gu = p + "experts.gate_up_proj";
    w.experts_gate_up = ld.sharded({{gu, {E, 2 * Im, H}, 1, r * ms, ms}, {gu, {E, 2 * Im, H}, 1, Im + r * ms, ms}}, 1);
    w.experts_down = ld.sharded({{p + "experts.down_proj", {E, H, Im}, 2, r * ms, ms}});
  }
  return w;
}

// A clipped linear's bound: a 0-d (or [1]) float tensor. A NaN bound would silently clamp
// everything to NaN, so it is refused naming the tensor.
float clip_scalar(Loader& ld, const std::string& name) {
  const TensorRef* t = ld.ckpt_.find(name);
  GS_CHECK(t, "tensor '{}' not found in checkpoint {}: a clipped-linear tower (use_clipped_linears) needs all four "
              "bounds of every projection", name, ld.ckpt_.dir());
  Shape expect = t->shape.empty() ? Shape{} : Shape{1};
  Tensor h = Loader::host_view(ld.get(name, expect));
  float v = 0;
  convert_to_f32(h.dtype, h.data, &v, 1);
  GS_CHECK(!std::isnan(v), "tensor '{}' in {} is NaN (a clipped-linear bound)", name, *t->file);
  return v;
}

VisionLinear vision_linear(Loader& ld, const VisionConfig& v, const std::string& p, Shape shape) {
  VisionLinear l;
  l.w = ld.weight(p + ".linear.weight", shape);
  if (v.use_clipped_linears) {
    l.clip.input_min = clip_scalar(ld, p + ".input_min");
    l.clip.input_max = clip_scalar(ld, p + ".input_max");
    l.clip.output_min = clip_scalar(ld, p + ".output_min");
    l.clip.output_max = clip_scalar(ld, p + ".output_max");
    GS_CHECK(l.clip.input_min <= l.clip.input_max && l.clip.output_min <= l.clip.output_max,
             "tensors '{}.{{input,output}}_{{min,max}}': a lower bound lies above its upper bound ({} > {} or {} > {})",
             p, l.clip.input_min, l.clip.input_max, l.clip.output_min, l.clip.output_max);
  }
  return l;
}

// model.vision_tower.* and model.embed_vision.* (§6) for the config's vision_config.
std::shared_ptr<VisionWeights> load_vision(Loader& ld, const ModelConfig& c) {
  const VisionConfig& v = c.vision;
  const int64_t Hv = v.hidden_size, I = v.intermediate_size, qd = int64_t(v.num_heads) * v.head_dim;
  const std::string P = "model.vision_tower.";
  auto w = std::make_shared<VisionWeights>();
  w->input_proj = ld.weight(P + "patch_embedder.input_proj.weight", {Hv, v.patch_values()});
  w->position_table = ld.weight(P + "patch_embedder.position_embedding_table", {2, v.position_embedding_size, Hv});
  for (int i = 0; i < v.num_layers; ++i) {
    const std::string p = P + "encoder.layers." + std::to_string(i) + ".";
    VisionLayerWeights l;
    l.input_norm = ld.weight(p + "input_layernorm.weight", {Hv});
    l.post_attn_norm = ld.weight(p + "post_attention_layernorm.weight", {Hv});
    l.pre_ffn_norm = ld.weight(p + "pre_feedforward_layernorm.weight", {Hv});
    l.post_ffn_norm = ld.weight(p + "post_feedforward_layernorm.weight", {Hv});
    l.q = vision_linear(ld, v, p + "self_attn.q_proj", {qd, Hv});
    l.k = vision_linear(ld, v, p + "self_attn.k_proj", {qd, Hv});
    l.v = vision_linear(ld, v, p + "self_attn.v_proj", {qd, Hv});
    l.o = vision_linear(ld, v, p + "self_attn.o_proj", {Hv, qd});
    l.q_norm = ld.weight(p + "self_attn.q_norm.weight", {v.head_dim});
    l.k_norm = ld.weight(p + "self_attn.k_norm.weight", {v.head_dim});
    l.gate = vision_linear(ld, v, p + "mlp.gate_proj", {I, Hv});
    l.up = vision_linear(ld, v, p + "mlp.up_proj", {I, Hv});
    l.down = vision_linear(ld, v, p + "mlp.down_proj", {Hv, I});
    w->layers.push_back(std::move(l));
  }
  if (v.standardize) {
    w->std_bias = ld.weight(P + "std_bias", {Hv});
    w->std_scale = ld.weight(P + "std_scale", {Hv});
  }
  w->embed_projection = ld.weight("model.embed_vision.embedding_projection.weight", {c.hidden_size, Hv});
  return w;
}

}  // namespace

LoadProgress stderr_progress_bar(const std::string& label) {
  if (!::isatty(2)) return [](size_t, size_t) {};
  auto last = std::make_shared<int>(-1);
  return [label, last](size_t done, size_t total) {
    int pct = total ? int(100.0 * double(done) / double(total)) : 100;
    if (pct > 100) pct = 100;
    if (pct == *last) return;
    *last = pct;
    int filled = pct * 30 / 100;
    std::fprintf(stderr, "\r%s [%.*s%*s] %3d%% %.1f/%.1f GB", label.c_str(), filled,
                 "##############################", 30 - filled, "", pct, double(done) / 1e9, double(total) / 1e9);
    if (pct == 100) std::fputc('\n', stderr);
    std::fflush(stderr);
  };
}

ModelWeights load_weights(const Checkpoint& ckpt, const ModelConfig& cfg, Backend& backend,
                          const LoadProgress& progress, TpShard shard) {
  check_tensor_parallel(cfg, shard.size);
  GS_CHECK(shard.rank >= 0 && shard.rank < shard.size, "load_weights: rank {} of {}", shard.rank, shard.size);
  LoadProgress bar = progress;
  if (!bar && ckpt.loaded_bytes() > (size_t(1) << 30)) bar = stderr_progress_bar("loading " + ckpt.dir());
  Loader ld(ckpt, cfg, backend, bar);
  const std::string& P = cfg.weight_prefix;
  const int64_t H = cfg.hidden_size, V = cfg.vocab_size;
  ModelWeights w;
  // Vocabulary-parallel embedding and LM head; the last shards end in zero rows when the ranks do
  // not divide V (model/tensor_parallel.h).
  const int64_t Vs = vocab_shard_rows(cfg, shard.size), first = std::min(V, shard.rank * Vs);
  w.embed = ld.padded_rows(P + "embed_tokens.weight", {V, H}, first, std::min(Vs, V - first), Vs);
  w.final_norm = ld.weight(P + "norm.weight", {H});
  if (cfg.ple_dim) {
    const int64_t LP = int64_t(cfg.num_layers) * cfg.ple_dim;
    w.ple_table = ld.weight(P + "embed_tokens_per_layer.weight", {cfg.ple_vocab_size, LP});
    w.ple_model_proj = ld.weight(P + "per_layer_model_projection.weight", {LP, H});
    w.ple_proj_norm = ld.weight(P + "per_layer_projection_norm.weight", {cfg.ple_dim});
  }
  for (int i = 0; i < cfg.num_layers; ++i) w.layers.push_back(load_layer(ld, cfg, i, shard));
  if (cfg.is_assistant) {
    const int64_t Ht = cfg.backbone_hidden_size;
    std::tie(w.pre_projection_embed, w.pre_projection_hidden) = ld.column_halves("pre_projection.weight", {H, 2 * Ht});
    w.post_projection = ld.weight("post_projection.weight", {Ht, H});
    if (cfg.use_ordered_embeddings) {
      w.centroids = ld.weight("masked_embedding.centroids.weight", {cfg.num_centroids, H});
      w.token_ordering = ld.token_ordering("masked_embedding.token_ordering", V);
    }
  }
  if (cfg.has_vision() && ckpt.find("model.vision_tower.patch_embedder.input_proj.weight"))
    w.vision = load_vision(ld, cfg);
  if (bar) bar(ld.total_, ld.total_);
  ld.warn_unused();
  const std::string tower =
      w.vision ? fmt::format(", vision tower {:.3f} GB", double(w.vision->bytes()) / 1e9) : std::string();
  if (shard.active())
    log::info("loaded {} rank {}/{} ({} layers{}, {:.2f} GB on {})", ckpt.dir(), shard.rank, shard.size, cfg.num_layers,
              tower, double(w.bytes()) / 1e9, backend.name());
  else
    log::info("loaded {} ({} layers{}, {:.2f} GB on {})", ckpt.dir(), cfg.num_layers, tower, double(w.bytes()) / 1e9,
              backend.name());
  return w;
}

size_t ModelWeights::bytes() const {
  size_t n = 0;
  auto add = [&](const Tensor& t) { n += t.defined() ? t.nbytes() : 0; };
  for (const Tensor* t : {&embed, &final_norm, &ple_table, &ple_model_proj, &ple_proj_norm, &pre_projection_embed,
                          &pre_projection_hidden, &post_projection, &centroids, &token_ordering})
    add(*t);
  for (const LayerWeights& l : layers) {
    for (const Tensor* t :
         {&l.input_norm, &l.post_attn_norm, &l.pre_ffn_norm, &l.post_ffn_norm, &l.qkv, &l.q_norm, &l.k_norm, &l.o_proj,
          &l.gate_up, &l.down, &l.ple_gate, &l.ple_proj, &l.ple_post_norm, &l.pre_ffn_norm_2, &l.post_ffn_norm_1,
          &l.post_ffn_norm_2, &l.router_proj, &l.router_scale, &l.per_expert_scale, &l.experts_gate_up,
          &l.experts_down})
      add(*t);
  }
  if (vision) n += vision->bytes();
  return n;
}

size_t VisionWeights::bytes() const {
  size_t n = 0;
  auto add = [&](const Tensor& t) { n += t.defined() ? t.nbytes() : 0; };
  for (const Tensor* t : {&input_proj, &position_table, &std_bias, &std_scale, &embed_projection}) add(*t);
  for (const VisionLayerWeights& l : layers)
    for (const Tensor* t : {&l.input_norm, &l.post_attn_norm, &l.pre_ffn_norm, &l.post_ffn_norm, &l.q.w, &l.k.w,
                            &l.v.w, &l.o.w, &l.q_norm, &l.k_norm, &l.gate.w, &l.up.w, &l.down.w})
      add(*t);
  return n;
}

}  // namespace gs
