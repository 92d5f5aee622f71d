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

// Up to this many routed rows (T·k) the experts run as a memory-bound GEMV over each active
// expert's weights (moe_gemv.cu: decode); above it, as grouped tensor-core GEMMs (prefill).
// GS_MOE_GEMV_MAX_ROWS overrides it (A/B runs). Measured on an H200, 26B-A4B cookbook at c=100
// (~100 sequences, ~800 routed rows per decode step), 2026-11-24: with 1024 (the GEMV path) decode
// steps took 39.6 ms and output was 2,339 tok/s; with 512 (the grouped path) 36.0 ms and 2,488
// tok/s. Neither is good at that size (every expert is touched by ~6 rows, so a step must stream
// all 1.5 GB of a layer's experts: 0.35 ms at the copy ceiling, against ~1 ms measured).
constexpr int64_t kMoeGemvMaxRows = 512;

// Scratch bytes moe_experts needs for T tokens, top-k, E experts, hidden H, expert width I.
size_t moe_experts_scratch_bytes(int64_t T, int64_t k, int64_t E, int64_t H, int64_t I);

// out[t] = Σ_j weights[t,j] · down[e](gelu_tanh(g) ⊙ u), [g|u] = x[t]·gate_up[e]ᵀ, e = ids[t,j],
// summed in f32 in ascending expert order and rounded once. On the GEMV path g, u, the activation
// and each expert's output stay f32; the grouped-GEMM path rounds them to bf16 (tensor cores). Expert ids outside [0, E) contribute
// nothing (validated upstream; see embedding.h on device-side errors).
void launch_moe_experts(const Tensor& x, const Tensor& ids, const Tensor& weights, const Tensor& gate_up,
                        const Tensor& down, const Tensor& out, void* scratch, size_t scratch_bytes,
                        cudaStream_t stream);

}  // namespace gs::cuda
