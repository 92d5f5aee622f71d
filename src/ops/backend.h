// The op interface. The Gemma-4 model (model/) is written once against it; backends
// (kernels/cpu, kernels/cuda) implement it. Fusion lives inside ops, never in the model.
//
// Conventions
// - Tensors are row-major and contiguous. "Rows" are tokens unless said otherwise.
// - Activations have the backend's activation_dtype() (cpu: f32, cuda: bf16); ops accumulate in
//   f32 and round once when they store. Weights may be bf16, f16 or f32 (cpu keeps the file's
//   dtype, cuda stores bf16).
// - Linear weights are [out, in] as in the checkpoint: matmul computes x · wᵀ.
// - Every op may run asynchronously on the backend's stream; copy_to_host synchronises.
// - An op never allocates on the hot path; the model owns its workspaces.
#pragma once
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "ops/attention_batch.h"
#include "ops/kv_cache.h"
#include "ops/kv_layout.h"
#include "ops/rope.h"

namespace gs {

[[noreturn]] void throw_not_implemented(const std::string& message);

// Where the q|k|v projection output of one attention layer comes from.
enum class QkvLayout {
  QKV,       // rows = [q (Nq·d) | k (Nkv·d) | v (Nkv·d)]
  QK_SHARED, // rows = [q | k]; V = v_norm(raw k)   (attention_k_eq_v full layers)
  Q_ONLY,    // rows = [q]; the layer reads another layer's cache (KV-shared, assistant)
};

struct AttentionParams {
  int num_q_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 0;
  int sliding_window = 0;       // 0: full causal; else keys with q - k < W are visible
  bool mm_bidirectional = false;  // allow (q, k) when mm_block[q] == mm_block[k] >= 0
  // With mm_bidirectional on a sliding layer: the window still applies to the block's earlier keys
  // (allowed iff q - k < W and (k <= q or same block): transformers 5.17's AND(window, OR(causal,
  // block))); false: the whole block is visible, beyond the window.
  bool mm_block_in_window = false;
  float scale = 1.0f;           // Gemma-4: 1.0
};

// Sampling controls of one logits row. temperature <= 0 means greedy (argmax, ties: lowest id).
// top_k <= 0 / top_p >= 1 / min_p <= 0 disable those filters. Random draws come from a
// counter-based generator keyed by (seed, step), so a seeded request samples the same tokens
// whatever else is in the batch.
struct SamplingRow {
  float temperature = 0.f;
  int top_k = 0;
  float top_p = 1.f;
  float min_p = 0.f;
  uint64_t seed = 0;
  uint64_t step = 0;
};

// One token of a row's logit adjustments (Backend::adjust_logits); a row names a token once.
struct LogitAdjustToken {
  int token = 0;
  float bias = 0.f;       // 1. logit_bias
  bool banned = false;    // 2. min_tokens not reached: EOS and stop tokens
  bool repeated = false;  // 3. generated and not in the row's prompt set (which applies it itself)
  int count = 0;          // 4. times generated so far
};

// The adjustments of one logits row. The repetition penalty covers the tokens marked `repeated`
// and every id of `prompt_set`, a device tensor uploaded once per request (upload_token_set), so
// a step sends only what changes: the generated tokens, biases and bans.
struct LogitAdjustRow {
  std::vector<LogitAdjustToken> tokens;
  float repetition_penalty = 1.f;  // > 0; 1: off
  float presence_penalty = 0.f, frequency_penalty = 0.f;
  Tensor prompt_set;               // i32 [n] distinct prompt ids on the backend, or undefined
  bool empty() const { return tokens.empty() && (repetition_penalty == 1.f || !prompt_set.defined()); }
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;           // "cpu", "cuda:0 (NVIDIA H200)"
  virtual Device device() const = 0;
  virtual DType activation_dtype() const = 0;
  virtual DType kv_dtype() const { return activation_dtype(); }
  virtual DType weight_dtype(DType file_dtype) const = 0;  // storage dtype for a weight from a file

  // ---- memory -------------------------------------------------------------------------------
  virtual Tensor empty(DType dtype, Shape shape) = 0;
  virtual void copy_from_host(const Tensor& dst, const void* src) = 0;  // dst.nbytes() bytes
  virtual void copy_to_host(const Tensor& src, void* dst) = 0;          // synchronises
  virtual void copy(const Tensor& dst, const Tensor& src) = 0;          // same dtype and numel
  // Uploads a host tensor of any float dtype as a weight in weight_dtype(src.dtype).
  virtual Tensor upload_weight(const Tensor& host_src) = 0;
  // Fills with uniform random values in [-scale, scale] generated on the device (dummy weights).
  virtual void fill_uniform(const Tensor& t, uint64_t seed, float scale) = 0;
  virtual void fill(const Tensor& t, float value) = 0;
  virtual size_t free_memory_bytes() const = 0;
  virtual size_t total_memory_bytes() const = 0;
  virtual void synchronize() = 0;
  // Pool g: [layout.group(g).cache_layers, num_pages[g], page_size, kv_heads, head_dim] for K and for V.
  virtual KvCache allocate_kv_cache(const KvLayout& layout, int page_size, const int num_pages[kNumKvGroups]) = 0;

  // ---- dense math ---------------------------------------------------------------------------
  // out[T,N] = x[T,K] · w[N,K]ᵀ. out may be f32 even when activations are bf16 (logits).
  virtual void matmul(const Tensor& x, const Tensor& w, const Tensor& out) = 0;
  // out[t] = table[ids[t]] · scale (scale already rounded to the activation dtype by the caller).
  virtual void embedding(const Tensor& table, const Tensor& ids, float scale, const Tensor& out) = 0;
  // The vocabulary-parallel form (tensor parallelism): table holds the ids [first_id, first_id +
  // rows); other ids give zero rows, which the ranks' all-reduce fills in.
  virtual void embedding_rows(const Tensor& table, const Tensor& ids, int64_t first_id, float scale,
                              const Tensor& out) = 0;
  // out = rms_norm(x) over the last dim, times weight when weight is non-null. out may alias x.
  virtual void rms_norm(const Tensor& x, const Tensor* weight, float eps, const Tensor& out) = 0;
  // residual = (residual + rms_norm(x)·weight) · out_scale, in place. (post-norm + residual add
  // + layer_scalar in one pass.)
  virtual void residual_add_norm(const Tensor& residual, const Tensor& x, const Tensor& weight, float eps,
                                 float out_scale) = 0;
  // residual_add_norm, then next_out = rms_norm(residual)·next_weight: the next block's input norm
  // read from the row just written (one pass over the row instead of two on a fused backend).
  virtual void residual_add_norm_then_norm(const Tensor& residual, const Tensor& x, const Tensor& weight, float eps,
                                           float out_scale, const Tensor& next_weight, const Tensor& next_out) {
    residual_add_norm(residual, x, weight, eps, out_scale);
    rms_norm(residual, &next_weight, eps, next_out);
  }
  // out = a + b (same shape).
  virtual void add(const Tensor& a, const Tensor& b, const Tensor& out) = 0;
  // x = x · s, in place.
  virtual void scale(const Tensor& x, float s) = 0;
  // out[T,I] = gelu_tanh(gate_up[:, :I]) ⊙ gate_up[:, I:]   (gate_up is [T, 2I], gate first)
  virtual void gelu_tanh_mul(const Tensor& gate_up, const Tensor& out) = 0;
  // out = gelu_tanh(a) ⊙ b (same shape).
  virtual void gelu_tanh_mul_pair(const Tensor& a, const Tensor& b, const Tensor& out) = 0;
  // A Gemma MLP's first half: matmul(x, w, gate_up) then gelu_tanh_mul(gate_up, out), with the same
  // roundings. gate_up ([T, 2I]) is scratch for backends that run the two ops; a backend may fuse
  // them and never touch it (the cuda one does for decode rows, saving a launch per layer).
  virtual void matmul_gelu_mul(const Tensor& x, const Tensor& w, const Tensor& gate_up, const Tensor& out) {
    matmul(x, w, gate_up);
    gelu_tanh_mul(gate_up, out);
  }
  // out = gelu_tanh(x · wᵀ) ⊙ b: matmul(x, w, out) then gelu_tanh_mul_pair(out, b, out) (the PLE gate).
  virtual void matmul_gelu_mul_pair(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& out) {
    matmul(x, w, out);
    gelu_tanh_mul_pair(out, b, out);
  }
  // Per-layer inputs (PLE), gemma4-architecture.md §2.3. proj: [T, L·P] (per_layer_model_projection
  // of the scaled embeddings); table: [V, L·P]; out: [L, T, P] (layer-major, so each layer reads a
  // contiguous slice).
  //   out[l,t] = (rms_norm(round(proj[t,l] · proj_scale)) · norm_w + round(table[ids[t], l] · table_scale)) · combine_scale
  virtual void per_layer_inputs(const Tensor& proj, const Tensor& table, const Tensor& ids, const Tensor& norm_w,
                                float proj_scale, float table_scale, float combine_scale, float eps,
                                const Tensor& out) = 0;
  // out[r] = x[rows[r]]
  virtual void gather_rows(const Tensor& x, const Tensor& rows, const Tensor& out) = 0;
  // x = cap · tanh(x / cap), in place.
  virtual void softcap(const Tensor& x, float cap) = 0;

  // ---- attention ----------------------------------------------------------------------------
  // From one layer's projection output `qkv` ([T, width] per QkvLayout): q = RoPE(q_norm(q)) into
  // q_out [T, Nq·d]; unless Q_ONLY, k = RoPE(k_norm(k)) and v = v_norm(v or raw k) are written into
  // the cache layer `cache_layer` of `pool` at batch.slot_mapping[group]. RoPE angles use
  // batch.positions.
  virtual void qkv_prepare(const Tensor& qkv, QkvLayout layout, const AttentionParams& p, const RopeSpec& rope,
                           const Tensor& q_norm_w, const Tensor* k_norm_w, float eps, const AttentionBatch& batch,
                           KvGroup group, KvPool& pool, int cache_layer, const Tensor& q_out) = 0;
  // out[T, Nq·d] = softmax(q·kᵀ·scale + mask)·v over the paged cache of `cache_layer`. Mask: causal
  // (k ≤ q), plus q - k < W when sliding, OR the vision-block overlay when mm_bidirectional.
  virtual void attention(const Tensor& q, const AttentionBatch& batch, KvGroup group, const KvPool& pool,
                         int cache_layer, const AttentionParams& p, const Tensor& out) = 0;

  // ---- mixture of experts (26B-A4B), §2.8 ---------------------------------------------------
  // Router on the residual r [T,H]: z = rms_norm(r)·router_scale·in_scale; logits = z·projᵀ;
  // softmax over all experts; top-k; renormalise; × per_expert_scale. ids: i32 [T,k]; weights: f32 [T,k].
  virtual void moe_route(const Tensor& r, const Tensor& router_scale, const Tensor& router_proj,
                         const Tensor& per_expert_scale, float in_scale, float eps, int top_k, const Tensor& ids,
                         const Tensor& weights) = 0;
  // out[t] = Σ_j weights[t,j] · down[e](gelu_tanh(g) ⊙ u), [g|u] = x[t]·gate_up[e]ᵀ, e = ids[t,j].
  // gate_up: [E, 2I, H]; down: [E, H, I].
  virtual void moe_experts(const Tensor& x, const Tensor& ids, const Tensor& weights, const Tensor& gate_up,
                           const Tensor& down, const Tensor& out) = 0;

  // An MoE layer's two branches summed (§2.8):
  //   out = rms_norm(dense)·dense_norm + rms_norm(moe_experts(x, ids, weights, gate_up, down))·experts_norm
  // out may alias dense; experts [T, H] is scratch for backends that run the ops separately (the
  // cuda one merges the experts' combine, both norms and the add into one kernel).
  virtual void moe_experts_sum(const Tensor& x, const Tensor& ids, const Tensor& weights, const Tensor& gate_up,
                               const Tensor& down, const Tensor& dense, const Tensor& dense_norm,
                               const Tensor& experts_norm, float eps, const Tensor& experts, const Tensor& out) {
    moe_experts(x, ids, weights, gate_up, down, experts);
    rms_norm(dense, &dense_norm, eps, out);
    rms_norm(experts, &experts_norm, eps, experts);
    add(out, experts, out);
  }

  // ---- vision tower (gemma4-architecture.md §4.2) -------------------------------------------
  // A backend without these cannot run the tower (text serving does not need them): the defaults
  // throw naming the op. Rows are patches of all images of a step, packed (no padding rows).
  //
  // x = min(max(x, lo), hi), in place: a clipped linear's bounds (±inf leave x as it is).
  virtual void clamp(const Tensor& x, float lo, float hi) { missing_vision_op("clamp"); }
  // Patch embedding's 2-D position: x[r] += round(table[0, pos_xy[r,0]] + table[1, pos_xy[r,1]]).
  // table: [2, P, Hv]; pos_xy: i32 [rows, 2] (x = patch column, y = patch row).
  virtual void vision_position_add(const Tensor& x, const Tensor& table, const Tensor& pos_xy) {
    missing_vision_op("vision_position_add");
  }
  // 2-D RoPE in place on x [rows, heads·head_dim]: with s = head_dim/2, dims [0, s) rotate by the
  // row's x position and dims [s, 2s) by its y position; inside each half rotate-half pairs (i, i + s/2)
  // with frequency theta^(-2i/s), i < s/2 (cos/sin in f32, rounded to the activation dtype).
  virtual void vision_rope(const Tensor& x, const Tensor& pos_xy, int heads, int head_dim, float theta) {
    missing_vision_op("vision_rope");
  }
  // The position-aware pooler: out[c] = round(Σ_j x[src[c, j]] · (1/k)) · scale over the k entries of
  // row c of src (i32 [cells, k]: the k×k patches of output cell c), rounded again when stored.
  virtual void vision_pool(const Tensor& x, const Tensor& src, float scale, const Tensor& out) {
    missing_vision_op("vision_pool");
  }
  // x = (x - bias) ⊙ scale over the last dim, in place (the large towers' standardize).
  virtual void standardize(const Tensor& x, const Tensor& bias, const Tensor& scale) {
    missing_vision_op("standardize");
  }
  // dst[rows[i]] = src[i]: the projected soft tokens written over their placeholder rows.
  virtual void scatter_rows(const Tensor& src, const Tensor& rows, const Tensor& dst) {
    missing_vision_op("scatter_rows");
  }
  // Bidirectional attention over packed images (the vision tower): q, k, v: [rows, heads*head_dim]
  // views (row stride may exceed heads*head_dim: column slices of one qkv buffer); out contiguous
  // [rows, heads*head_dim]; image i's rows are [h_cu_rows[i], h_cu_rows[i+1]) and see every row of
  // their image; scale 1.0 (q and k are RMS-normed).
  virtual void vision_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& cu_rows,
                                const std::vector<int>& h_cu_rows, int heads, int head_dim, const Tensor& out) {
    throw_not_implemented("vision_attention is not implemented on this backend");
  }

  // ---- sampling -----------------------------------------------------------------------------
  // logits [R, V] f32 → token ids [R] i32 and the log-probability of each chosen token [R] f32
  // (under the unfiltered distribution at temperature 1, as OpenAI's logprobs report).
  // rows: host array of R sampling rows.
  virtual void sample(const Tensor& logits, const std::vector<SamplingRow>& rows, const Tensor& out_ids,
                      const Tensor& out_logprobs) = 0;
  // Per-row adjustments of the logits before sampling, in place, in vLLM's order (each step sees
  // the result of the one before):
  //   1. logit_bias:          l += bias
  //   2. banned (min_tokens): l = -inf
  //   3. repetition penalty on every token of the prompt or the output: l = l > 0 ? l / p : l · p
  //      (a quotient past the float range saturates at FLT_MAX)
  //   4. presence/frequency:  l -= presence + frequency · count, for tokens generated count > 0 times
  // Temperature and the filters come after, in sample(); logprobs are read from the adjusted row.
  // rows: host array of R entries; a row with nothing to adjust is left alone.
  virtual void adjust_logits(const Tensor& logits, const std::vector<LogitAdjustRow>& rows) = 0;
  // Top-n log-probabilities per row (log_softmax of logits): ids [R, n] i32, logprobs [R, n] f32.
  virtual void top_logprobs(const Tensor& logits, int n, const Tensor& ids, const Tensor& logprobs) = 0;
  // Greedy ids computed and kept on the device, with no host input (so a CUDA graph can record
  // them): the MTP drafter's draft tokens, each the next draft step's input. Ties go to the lowest
  // token id, as the sampler's greedy rows.
  //   argmax_rows: out_ids[r] = argmax of logits row r (f32 [R, V]).
  //   centroid_head_argmax: the centroid head (use_ordered_embeddings, gemma4-architecture.md §5.1)
  //     without its [R, V] logits: per row of d [R, H], the top_k clusters by centroid_scores
  //     (f32 [R, C], ties to the lower cluster), then the token t of those clusters with the largest
  //     d·embed[t]; cluster c owns token_ordering (i32 [V]) entries [c·V/C, (c+1)·V/C).
  virtual void argmax_rows(const Tensor& logits, const Tensor& out_ids) = 0;
  virtual void centroid_head_argmax(const Tensor& d, const Tensor& embed, const Tensor& centroid_scores,
                                    const Tensor& token_ordering, int top_k, const Tensor& out_ids) = 0;

  // ---- graphs (optional: the cuda backend records CUDA graphs) --------------------------------
  // Record a sequence of ops once and replay it with one launch (decode steps). Callers check
  // supports_graphs() first; the defaults do nothing and return -1.
  // Between begin_capture() and end_capture() ops are recorded, not run. Inside a capture:
  //   - no allocation: empty(), upload_weight() and growing an op's scratch are errors, so run the
  //     same step once eagerly first (that sizes every workspace);
  //   - no host input: copy_from_host, copy_to_host, sample() and adjust_logits() run outside;
  //     upload a step's batch tensors (AttentionBatch, ids) into the same device tensors before
  //     each replay, and the graph reads the new contents.
  // A graph keeps reading and writing the tensors it recorded: keep them alive and in place.
  virtual bool supports_graphs() const { return false; }
  virtual void begin_capture() {}
  virtual int end_capture() { return -1; }       // a handle for replay()
  virtual void replay(int graph) {}              // enqueues the recorded ops on the backend's stream
  virtual void release_graph(int graph) {}

  // ---- launch hints -------------------------------------------------------------------------
  // The number of token rows of the step whose ops come next (run eagerly or captured into a
  // graph). Only a hint: results never depend on it. The cuda backend uses it to launch one-row
  // steps with programmatic dependent launch (launch_util.h), which pays off only there.
  virtual void set_step_rows(int rows) { (void)rows; }

  // ---- several devices (tensor parallelism, parallel/) ----------------------------------------
  // The device ordinal (-1: the host) and the native stream ops run on (cudaStream_t; null on cpu),
  // which a communicator enqueues its collectives on. A rank's thread calls make_current() once so
  // that its ops go to the backend's device.
  virtual int device_index() const { return -1; }
  virtual void* native_stream() { return nullptr; }
  virtual void make_current() {}

  // ---- overlapped steps ---------------------------------------------------------------------
  // The engine enqueues step N+1 before it reads step N's results (runner/model_runner.h). For
  // that a step's results come back without waiting for the whole stream, and step N+1's input
  // ids can come from step N's sampled ids on the device.
  //
  // Host memory a device copy can land in without the copy waiting for the host (pinned on cuda).
  virtual std::shared_ptr<void> host_buffer(size_t bytes) {
    return std::shared_ptr<void>(::operator new(std::max<size_t>(bytes, 1)), [](void* p) { ::operator delete(p); });
  }
  // Enqueues a copy of `src` into `dst` (memory from host_buffer()); the bytes are there once a
  // fence recorded after this call has been waited for.
  virtual void copy_to_host_async(const Tensor& src, void* dst) { copy_to_host(src, dst); }
  // A marker after everything enqueued so far; wait_fence() returns once the device has passed it.
  virtual uint64_t record_fence() { return 0; }
  virtual void wait_fence(uint64_t fence) {}
  // dst[d] = src[s] for each (d, s) in `pairs` (host pairs of element indices), i32 tensors.
  virtual void scatter_ids(const Tensor& dst, const Tensor& src, const std::vector<std::pair<int, int>>& pairs) = 0;

  // An i32 tensor on the backend holding `ids` (non-empty; the prompt set of LogitAdjustRow).
  // Allocates: call it once per request, outside a capture.
  Tensor upload_token_set(const std::vector<int>& ids) {
    Tensor t = empty(DType::I32, Shape{int64_t(ids.size())});
    copy_from_host(t, ids.data());
    return t;
  }

 private:
  [[noreturn]] void missing_vision_op(const char* op) const {
    throw_not_implemented(std::string(op) + " (a vision tower op) is not implemented on the " + name() + " backend");
  }
};

}  // namespace gs
