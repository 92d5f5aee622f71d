// The pieces of one Gemma-4 decoder layer (gemma4-architecture.md §2.4-2.9), each a short sequence
// of backend ops over the model's workspace. Internal to model/: Gemma4Model::forward strings them
// together.
#pragma once
#include "model/model_config.h"
#include "model/weights.h"
#include "ops/backend.h"
#include "parallel/communicator.h"

namespace gs {

// Activation buffers sized once by Gemma4Model::reserve for max_tokens rows; each step uses the
// first T rows (rows_of).
struct Gemma4Workspace {
  int max_tokens = 0, max_logit_rows = 0;
  Tensor x;         // [T, H] residual stream
  Tensor a;         // [T, H] normed input of a block
  Tensor o;         // [T, H] block output before its post-norm
  Tensor m;         // [T, H] MoE experts output
  Tensor qkv;       // [T, max qkv width]
  Tensor q;         // [T, Nq · max d]
  Tensor attn;      // [T, Nq · max d]
  Tensor gate_up;   // [T, 2 · max I]
  Tensor act;       // [T, max I]
  Tensor moe_ids;   // i32 [T, top_k]
  Tensor moe_w;     // f32 [T, top_k]
  Tensor ple_proj;  // [T, L · P]
  Tensor ple;       // [L, T, P]
  Tensor ple_gate;  // [T, P]
  Tensor hidden;    // [R, H] final-normed rows whose logits are wanted
  Tensor logits;    // f32 [R, V]
  Tensor logits_shard;  // f32 [R, V / ranks], this rank's vocabulary slice (tensor parallel only)
  // Tensor parallelism: sums the partial outputs of the row-parallel projections (o_proj, down,
  // the experts) over the ranks; null on one device, where no block calls it.
  Communicator* tp = nullptr;
  size_t bytes() const;
};

// The first `rows` rows of a workspace buffer, viewed as [rows, cols].
Tensor rows_of(const Tensor& buf, int64_t rows, int64_t cols);

// The blocks hand the normed input along: each block's last op writes ws.a = the next block's input
// norm of h together with its residual add (Backend::residual_add_norm_then_norm), so no block
// starts with a norm launch of its own. On entry ws.a holds the block's input norm of h.

// h += post_attention_norm(o_proj(attention(input_norm(h)))), reading/writing the layer's KV cache.
// Expects ws.a = input_norm(h); leaves ws.a = pre_ffn_norm(h).
void attention_block(Backend& be, const ModelConfig& cfg, int layer, const LayerWeights& w, Gemma4Workspace& ws,
                     const AttentionBatch& batch, KvCache& cache, int T);

// h = (h + post_ffn_norm(ffn(h))) · out_scale; ffn is the dense MLP, or for MoE layers the dense
// branch plus the routed experts (§2.8). Expects ws.a = pre_ffn_norm(h); leaves ws.a =
// rms_norm(h)·next_norm when next_norm is given.
void ffn_block(Backend& be, const ModelConfig& cfg, int layer, const LayerWeights& w, Gemma4Workspace& ws, int T,
               float out_scale, const Tensor* next_norm);

// Per-layer inputs of all layers for this step (§2.3) into ws.ple, from the scaled embeddings in ws.x.
void compute_per_layer_inputs(Backend& be, const ModelConfig& cfg, const ModelWeights& w, Gemma4Workspace& ws,
                              const Tensor& ids, int T);

// h = (h + post_per_layer_input_norm(proj(gelu_tanh(gate(h)) ⊙ ple[layer]))) · out_scale. Reads h
// itself; leaves ws.a = rms_norm(h)·next_norm when next_norm is given.
void ple_block(Backend& be, const ModelConfig& cfg, int layer, const LayerWeights& w, Gemma4Workspace& ws, int T,
               float out_scale, const Tensor* next_norm);

}  // namespace gs
