// The CPU backend's ops as free functions (one file per family: matmul, elementwise, attention,
// moe, sampling). cpu_backend.cpp binds them to the Backend interface. Activations are f32;
// weights may be f32, bf16 or f16 and are converted on the fly.
#pragma once
#include <cstdint>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "core/tensor.h"
#include "kernels/cpu/thread_pool.h"
#include "ops/backend.h"

namespace gs::cpu {

// ---- element access -----------------------------------------------------------------------------
inline float load(const Tensor& t, int64_t i) {
  switch (t.dtype) {
    case DType::F32: return t.ptr<const float>()[i];
    case DType::BF16: return bf16_to_f32(t.ptr<const uint16_t>()[i]);
    case DType::F16: return f16_to_f32(t.ptr<const uint16_t>()[i]);
    default: throw Error("cpu backend: tensor {} is not a float tensor", t.str());
  }
}
inline void store(const Tensor& t, int64_t i, float v) {
  switch (t.dtype) {
    case DType::F32: t.ptr<float>()[i] = v; return;
    case DType::BF16: t.ptr<uint16_t>()[i] = f32_to_bf16(v); return;
    case DType::F16: t.ptr<uint16_t>()[i] = f32_to_f16(v); return;
    default: throw Error("cpu backend: tensor {} is not a float tensor", t.str());
  }
}
// n elements of t starting at element `first`, as f32 into dst.
inline void load_row(const Tensor& t, int64_t first, int64_t n, float* dst) {
  convert_to_f32(t.dtype, static_cast<const char*>(t.data) + size_t(first) * dtype_size(t.dtype), dst, size_t(n));
}

// Argument checks shared by the ops: a mismatch is a programming error in the caller, reported
// with the op name and the shapes involved.
void check_f32(const char* op, const Tensor& t, const char* what);
void check_float(const char* op, const Tensor& t, const char* what);
void check_i32(const char* op, const Tensor& t, const char* what);

// Per-thread scratch of at least n floats, reused across calls (grows, never shrinks).
float* thread_scratch(size_t n, int slot = 0);

// ---- dense math (cpu_matmul.cpp, cpu_elementwise.cpp) --------------------------------------------
void matmul(ThreadPool& pool, const Tensor& x, const Tensor& w, const Tensor& out);
void embedding(ThreadPool& pool, const Tensor& table, const Tensor& ids, float scale, const Tensor& out);
// Ids in [first_id, first_id + table rows) read table[id - first_id]; the others give zero rows.
void embedding_rows(ThreadPool& pool, const Tensor& table, const Tensor& ids, int64_t first_id, float scale,
                    const Tensor& out);
void rms_norm(ThreadPool& pool, const Tensor& x, const Tensor* weight, float eps, const Tensor& out);
void residual_add_norm(ThreadPool& pool, const Tensor& residual, const Tensor& x, const Tensor& weight, float eps,
                       float out_scale);
void add(ThreadPool& pool, const Tensor& a, const Tensor& b, const Tensor& out);
void scale(ThreadPool& pool, const Tensor& x, float s);
void gelu_tanh_mul(ThreadPool& pool, const Tensor& gate_up, const Tensor& out);
void gelu_tanh_mul_pair(ThreadPool& pool, const Tensor& a, const Tensor& b, const Tensor& out);
void per_layer_inputs(ThreadPool& pool, const Tensor& proj, const Tensor& table, const Tensor& ids,
                      const Tensor& norm_w, float proj_scale, float table_scale, float combine_scale, float eps,
                      const Tensor& out);
void gather_rows(const Tensor& x, const Tensor& rows, const Tensor& out);
void softcap(ThreadPool& pool, const Tensor& x, float cap);
float gelu_tanh(float x);
// y = x · (mean(x²) + eps)^-1/2 (· w when w is defined), the Gemma-4 RMSNorm over n values.
void rms_norm_row(const float* x, const Tensor* w, float eps, int64_t n, float* y);

// ---- attention (cpu_attention.cpp) ---------------------------------------------------------------
void qkv_prepare(ThreadPool& pool, const Tensor& qkv, QkvLayout layout, const AttentionParams& p,
                 const RopeSpec& rope, const Tensor& q_norm_w, const Tensor* k_norm_w, float eps,
                 const AttentionBatch& batch, KvGroup group, KvPool& kv, int cache_layer, const Tensor& q_out);
void attention(ThreadPool& pool, const Tensor& q, const AttentionBatch& batch, KvGroup group, const KvPool& kv,
               int cache_layer, const AttentionParams& p, const Tensor& out);

// ---- vision tower (cpu_vision.cpp) ---------------------------------------------------------------
void clamp(ThreadPool& pool, const Tensor& x, float lo, float hi);
void vision_position_add(ThreadPool& pool, const Tensor& x, const Tensor& table, const Tensor& pos_xy);
void vision_rope(ThreadPool& pool, const Tensor& x, const Tensor& pos_xy, int heads, int head_dim, float theta);
void vision_pool(ThreadPool& pool, const Tensor& x, const Tensor& src, float scale, const Tensor& out);
void standardize(ThreadPool& pool, const Tensor& x, const Tensor& bias, const Tensor& scale);
void scatter_rows(const Tensor& src, const Tensor& rows, const Tensor& dst);
void vision_attention(ThreadPool& pool, const Tensor& q, const Tensor& k, const Tensor& v,
                      const std::vector<int>& cu_rows, int heads, int head_dim, const Tensor& out);

// ---- mixture of experts (cpu_moe.cpp) ------------------------------------------------------------
void moe_route(ThreadPool& pool, const Tensor& r, const Tensor& router_scale, const Tensor& router_proj,
               const Tensor& per_expert_scale, float in_scale, float eps, int top_k, const Tensor& ids,
               const Tensor& weights);
void moe_experts(ThreadPool& pool, const Tensor& x, const Tensor& ids, const Tensor& weights, const Tensor& gate_up,
                 const Tensor& down, const Tensor& out);

// ---- sampling (cpu_sampling.cpp) -----------------------------------------------------------------
void sample(ThreadPool& pool, const Tensor& logits, const std::vector<SamplingRow>& rows, const Tensor& out_ids,
            const Tensor& out_logprobs);
void adjust_logits(const Tensor& logits, const std::vector<LogitAdjustRow>& rows);
void top_logprobs(ThreadPool& pool, const Tensor& logits, int n, const Tensor& ids, const Tensor& logprobs);
// Greedy ids without the sampler (cpu_greedy_head.cpp): the MTP drafter's draft tokens.
void argmax_rows(const Tensor& logits, const Tensor& out_ids);
void centroid_head_argmax(ThreadPool& pool, const Tensor& d, const Tensor& embed, const Tensor& centroid_scores,
                          const Tensor& token_ordering, int top_k, const Tensor& out_ids);

}  // namespace gs::cpu
