// Mixture of experts (26B-A4B, gemma4-architecture.md §2.8): the router (moe_route.cu) and the
// expert FFNs over a token permutation with grouped GEMMs (moe_experts.cu). Nothing here waits for
// the host: per-expert counts stay on the device and the grouped GEMM reads them there, so a
// decode step with MoE can be captured in a CUDA graph.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>

#include "core/tensor.h"

namespace gs::cuda {

// z = rms_norm(r) · router_scale · in_scale (f32, no intermediate rounding, as the cpu backend
// and vLLM); logits = z · projᵀ; softmax over all experts; top-k (ties to the lower id);
// renormalise; × per_expert_scale. ids i32 [T, k], weights f32 [T, k]. The f32 logits [T, E]
// pass through `scratch` (moe_route_scratch_bytes) between the projection and the top-k kernel.
size_t moe_route_scratch_bytes(int64_t T, int64_t E);
void launch_moe_route(const Tensor& r, const Tensor& router_scale, const Tensor& router_proj,
                      const Tensor& per_expert_scale, float in_scale, float eps, int top_k, const Tensor& ids,
                      const Tensor& weights, void* scratch, size_t scratch_bytes, cudaStream_t stream);

// Up to this many routed rows (T·k: up to four tokens' experts) the experts run as FMA GEMVs over
// each active expert's weights (moe_gemv.cu); above it as a grouped tensor-core GEMM in 16-row
// tiles (grouped_gemm_mma.cu). The kernel policy's moe.gemv_max_rows overrides it. A GEMV reads each
// active expert's weights once, which wins while few tokens share an expert (docs/kernel-policy.md,
// "MoE").
constexpr int64_t kMoeGemvMaxRows = 32;
// Above it, up to this many routed rows per expert on average the grouped GEMM runs in 16-row
// tiles; beyond (prefill) in 64-row tiles, whose padding then costs less than their reuse gains
// (docs/kernel-policy.md, "MoE").
constexpr int64_t kMoeMma16MaxRowsPerExpert = 16;

// The kernel policy's moe.path forces the experts' kernels (the GEMV, or grouped_gemm_mma.cu in
// 16- or 64-row tiles); Auto chooses by the limits above. A forced GEMV applies only where its
// shared memory fits.

// The rest of an MoE layer's sum (Backend::moe_experts_sum), done by the experts' combine when
// given to launch_moe_experts: out = rms_norm(dense)·dense_norm + rms_norm(experts)·experts_norm,
// out bf16 and allowed to alias dense (bf16 [T, H]); norm weights bf16 [H].
struct MoeSum {
  const Tensor* dense;
  const Tensor* dense_norm;
  const Tensor* experts_norm;
  float eps;
};
// Whether the combine can take the sum for rows of H elements (one block holds a row).
inline bool moe_sum_supported(int64_t H) { return H % 32 == 0 && H / 4 <= 1024; }

// Scratch bytes moe_experts needs for T tokens, top-k, E experts, hidden H, expert width I.
size_t moe_experts_scratch_bytes(int64_t T, int64_t k, int64_t E, int64_t H, int64_t I);

// out[t] = Σ_j weights[t,j] · down[e](gelu_tanh(g) ⊙ u), [g|u] = x[t]·gate_up[e]ᵀ, e = ids[t,j],
// summed in f32 in ascending expert order and rounded once. g and u stay f32; the activation and
// each expert's output are rounded to bf16 (the tensor cores' operand and output), on the GEMV path
// and the grouped GEMMs alike. Expert ids outside [0, E) contribute nothing (validated upstream;
// see embedding.h on device-side errors).
// With sum: out receives the layer's sum instead (MoeSum).
void launch_moe_experts(const Tensor& x, const Tensor& ids, const Tensor& weights, const Tensor& gate_up,
                        const Tensor& down, const Tensor& out, void* scratch, size_t scratch_bytes,
                        cudaStream_t stream, const MoeSum* sum = nullptr);

}  // namespace gs::cuda
