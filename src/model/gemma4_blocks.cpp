#include "model/gemma4_blocks.h"

#include <cmath>

#include "core/error.h"

namespace gs {

size_t Gemma4Workspace::bytes() const {
  size_t n = 0;
  for (const Tensor* t : {&x, &a, &o, &m, &qkv, &q, &attn, &gate_up, &act, &moe_ids, &moe_w, &ple_proj, &ple,
                          &ple_gate, &hidden, &logits, &logits_shard})
    if (t->defined()) n += t->nbytes();
  return n;
}

Tensor rows_of(const Tensor& buf, int64_t rows, int64_t cols) {
  GS_CHECK(rows * cols <= buf.numel(), "model workspace: [{}, {}] does not fit in {}", rows, cols, buf.str());
  Tensor t = buf;
  t.shape = Shape{rows, cols};
  return t;
}

// A block's last op: the residual add, fused with the norm that follows it when there is one.
static void finish_block(Backend& be, const ModelConfig& cfg, Gemma4Workspace& ws, const Tensor& x, const Tensor& o,
                         const Tensor& post_norm, float out_scale, const Tensor* next_norm, int T) {
  if (next_norm)
    be.residual_add_norm_then_norm(x, o, post_norm, cfg.rms_norm_eps, out_scale, *next_norm,
                                   rows_of(ws.a, T, cfg.hidden_size));
  else
    be.residual_add_norm(x, o, post_norm, cfg.rms_norm_eps, out_scale);
}

// finish_block after a row-parallel projection (o holds this rank's partial sums): the all-reduce
// and the block's last op in one kernel where the communicator has one (decode-sized messages on
// GPUs: Communicator::all_reduce_residual_norm), else the all-reduce, then finish_block.
static void reduce_and_finish_block(Backend& be, const ModelConfig& cfg, Gemma4Workspace& ws, const Tensor& x,
                                    const Tensor& o, const Tensor& post_norm, float out_scale, const Tensor* next_norm,
                                    int T) {
  const Tensor a = next_norm ? rows_of(ws.a, T, cfg.hidden_size) : Tensor{};
  if (ws.tp->all_reduce_residual_norm(o, x, post_norm, cfg.rms_norm_eps, out_scale, next_norm,
                                      next_norm ? &a : nullptr))
    return;
  ws.tp->all_reduce_sum(o);
  finish_block(be, cfg, ws, x, o, post_norm, out_scale, next_norm, T);
}

void attention_block(Backend& be, const ModelConfig& cfg, int layer, const LayerWeights& w, Gemma4Workspace& ws,
                     const AttentionBatch& batch, KvCache& cache, int T) {
  const LayerSpec& spec = cfg.layers[size_t(layer)];
  const int Nq = cfg.num_q_heads, Nkv = spec.num_kv_heads, d = spec.head_dim;
  const QkvLayout layout = !spec.owns_kv ? QkvLayout::Q_ONLY : spec.k_eq_v ? QkvLayout::QK_SHARED : QkvLayout::QKV;
  const int64_t width = w.qkv.dim(0);

  AttentionParams p;
  p.num_q_heads = Nq;
  p.num_kv_heads = Nkv;
  p.head_dim = d;
  p.sliding_window = spec.type == LayerType::Sliding ? spec.sliding_window : 0;
  // Vision soft tokens see the other soft tokens of their image (§3.4); which layers, and whether the
  // window still limits the block's earlier keys, is the config's mm_overlay.
  const bool sliding = spec.type == LayerType::Sliding;
  p.mm_bidirectional = cfg.mm_overlay == MmOverlay::All || (sliding && cfg.mm_overlay != MmOverlay::None);
  p.mm_block_in_window = sliding && cfg.mm_overlay == MmOverlay::SlidingInWindow;
  p.scale = 1.0f;

  Tensor x = rows_of(ws.x, T, cfg.hidden_size), a = rows_of(ws.a, T, cfg.hidden_size);
  Tensor qkv = rows_of(ws.qkv, T, width), q = rows_of(ws.q, T, int64_t(Nq) * d);
  Tensor attn = rows_of(ws.attn, T, int64_t(Nq) * d), o = rows_of(ws.o, T, cfg.hidden_size);
  KvPool& pool = cache.pool(spec.group());

  be.matmul(a, w.qkv, qkv);  // a = input_norm(x), left by the block before
  be.qkv_prepare(qkv, layout, p, spec.rope, w.q_norm, spec.owns_kv ? &w.k_norm : nullptr, cfg.rms_norm_eps, batch,
                 spec.group(), pool, spec.kv_slot, q);
  be.attention(q, batch, spec.group(), pool, spec.kv_slot, p, attn);
  be.matmul(attn, w.o_proj, o);
  if (ws.tp)  // o_proj is row-parallel: each rank holds a partial sum
    reduce_and_finish_block(be, cfg, ws, x, o, w.post_attn_norm, 1.0f, &w.pre_ffn_norm, T);
  else
    finish_block(be, cfg, ws, x, o, w.post_attn_norm, 1.0f, &w.pre_ffn_norm, T);
}

void ffn_block(Backend& be, const ModelConfig& cfg, int layer, const LayerWeights& w, Gemma4Workspace& ws, int T,
               float out_scale, const Tensor* next_norm) {
  const int64_t H = cfg.hidden_size, I = w.down.dim(1);
  Tensor x = rows_of(ws.x, T, H), a = rows_of(ws.a, T, H), o = rows_of(ws.o, T, H);
  Tensor gate_up = rows_of(ws.gate_up, T, 2 * I), act = rows_of(ws.act, T, I);

  // Dense MLP (for MoE layers: the always-on "shared" branch) on the pre-FFN-normed stream
  // (a = pre_ffn_norm(x), left by the attention block).
  be.matmul_gelu_mul(a, w.gate_up, gate_up, act);
  be.matmul(act, w.down, o);
  if (ws.tp && !cfg.moe) {  // down is row-parallel (MoE layers: below)
    reduce_and_finish_block(be, cfg, ws, x, o, w.post_ffn_norm, out_scale, next_norm, T);
    return;
  }

  if (cfg.moe) {
    // Both branches read the residual stream after the attention add (§2.8).
    const int k = cfg.top_k_experts;
    Tensor ids = rows_of(ws.moe_ids, T, k), weights = rows_of(ws.moe_w, T, k), m = rows_of(ws.m, T, H);
    be.moe_route(x, w.router_scale, w.router_proj, w.per_expert_scale, float(1.0 / std::sqrt(double(H))),
                 cfg.rms_norm_eps, k, ids, weights);
    be.rms_norm(x, &w.pre_ffn_norm_2, cfg.rms_norm_eps, a);
    // o = post_ffn_norm_1(dense) + post_ffn_norm_2(experts)
    if (ws.tp) {
      // Each rank holds partial sums of both branches (a slice of every expert's width): reduce
      // them before the norms, which need whole rows.
      be.moe_experts(a, ids, weights, w.experts_gate_up, w.experts_down, m);
      ws.tp->all_reduce_sum(o);
      ws.tp->all_reduce_sum(m);
      be.rms_norm(o, &w.post_ffn_norm_1, cfg.rms_norm_eps, o);
      be.rms_norm(m, &w.post_ffn_norm_2, cfg.rms_norm_eps, m);
      be.add(o, m, o);
    } else {
      be.moe_experts_sum(a, ids, weights, w.experts_gate_up, w.experts_down, o, w.post_ffn_norm_1,
                         w.post_ffn_norm_2, cfg.rms_norm_eps, m, o);
    }
  }
  finish_block(be, cfg, ws, x, o, w.post_ffn_norm, out_scale, next_norm, T);
}

void compute_per_layer_inputs(Backend& be, const ModelConfig& cfg, const ModelWeights& w, Gemma4Workspace& ws,
                              const Tensor& ids, int T) {
  const int64_t L = cfg.num_layers, P = cfg.ple_dim, H = cfg.hidden_size;
  Tensor proj = rows_of(ws.ple_proj, T, L * P);
  be.matmul(rows_of(ws.x, T, H), w.ple_model_proj, proj);
  Tensor out = ws.ple;
  out.shape = Shape{L, T, P};
  // Scales as the reference applies them: Python floats for H^-1/2 and 2^-1/2, the table's
  // sqrt(P) as a tensor in the activation dtype.
  be.per_layer_inputs(proj, w.ple_table, ids, w.ple_proj_norm, float(1.0 / std::sqrt(double(H))),
                      round_to(be.activation_dtype(), std::sqrt(float(P))), float(std::sqrt(0.5)), cfg.rms_norm_eps,
                      out);
}

void ple_block(Backend& be, const ModelConfig& cfg, int layer, const LayerWeights& w, Gemma4Workspace& ws, int T,
               float out_scale, const Tensor* next_norm) {
  const int64_t H = cfg.hidden_size, P = cfg.ple_dim;
  Tensor x = rows_of(ws.x, T, H), o = rows_of(ws.o, T, H), g = rows_of(ws.ple_gate, T, P);
  // This layer's slice of ws.ple ([L, T, P], layer-major).
  Tensor ple = ws.ple;
  ple.data = static_cast<char*>(ws.ple.data) + size_t(layer) * T * P * dtype_size(ws.ple.dtype);
  ple.shape = Shape{int64_t(T), P};
  be.matmul_gelu_mul_pair(x, w.ple_gate, ple, g);
  be.matmul(g, w.ple_proj, o);
  finish_block(be, cfg, ws, x, o, w.ple_post_norm, out_scale, next_norm, T);
}

}  // namespace gs
