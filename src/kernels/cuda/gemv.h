// Skinny GEMMs for decode: out[M,N] = x[M,K] · w[N,K]ᵀ for M <= kGemvMaxRows, bf16 operands, f32
// accumulation, bf16 or f32 out. At these M every projection of a decode step is a weight stream
// (E2B's are 1.5-40 MB, 31B's 40-460 MB) and cuBLASLt spends most of a small one ramping up. This
// kernel reads every weight byte once with 16-byte loads, each warp's dot products whole (no
// split-K reduction kernel), and issues its first weight loads before pdl_wait(): weights do not
// depend on the previous kernel, so under PDL they stream while that kernel finishes. A weight
// too big for one wave of blocks (E2B's gate_up, the LM heads) streams through one wave whose warps
// each take several row groups, their loads running on from one group into the next.
// From kGemvMmaMinRows rows a tensor-core variant (gemv_mma.cuh) does the dot products instead,
// its weights staged through per-warp shared-memory rings, with the same epilogues.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "core/dtype.h"

namespace gs::cuda {

// The largest M the GEMV takes. The cuda backend sends it only the row counts and weights the
// kernel policy's `gemv` bounds name (cuda_backend.cpp); everything else goes to cuBLASLt.
constexpr int kGemvMaxRows = 16;
// Rows from which launch_gemv runs the tensor-core variant (gemv_mma.cuh) instead of the FMA one.
constexpr int kGemvMmaMinRows = 3;
// Under the batch-invariant policy (KernelPolicy::batch_invariant) the launchers take any M up to
// this (65535 tiles of grid y) and run every row count on the tensor-core variant in 16-row tiles.
// Its K split depends on N and K only and a row's accumulators see only that row, so each output
// row has the same bits whatever M is and whatever the other rows hold: a decode row, a verify row
// and a prefill row of the same token agree. The cost is prefill (every 16 rows read the weights
// again; docs/perf/speculative.md measures it).
constexpr int64_t kGemvInvariantMaxRows = int64_t(16) * 65535;

// True when launch_gemv accepts these operands: 1 <= M <= kGemvMaxRows (kGemvInvariantMaxRows
// under the batch-invariant policy), K a multiple of 8, x and w 16-byte aligned, out bf16 or f32.
bool gemv_supported(int64_t m, int64_t n, int64_t k, DType out_dtype, const void* x, const void* w);

// x: bf16 [M,K] (row stride K); w: bf16 [N,K]; out: [M,N] of out_dtype (bf16 or f32).
// Launched through launch_pdl (launch_util.h).
void launch_gemv(const void* x, const void* w, void* out, DType out_dtype, int64_t m, int64_t n, int64_t k,
                 cudaStream_t stream);

// The GEMV with the activation of a Gemma MLP in its epilogue, so the [M, 2I] (or [M, N])
// intermediate never goes through memory and its elementwise kernel is not launched. Same roundings
// as launch_gemv into bf16 followed by the backend's gelu_tanh_mul / gelu_tanh_mul_pair: each dot
// product is rounded to bf16, gelu(gate) is rounded again before the product.
//   gelu_mul:     w = [gate; up] ([2I, K]); out[m, i] = gelu_tanh(gate_i) · up_i, out bf16 [M, I]
//   gelu_mul_aux: out[m, n] = gelu_tanh(x·w_nᵀ) · aux[m, n]; aux, out bf16 [M, N]
// Both take what gemv_supported() takes with out bf16 (N = 2I for gelu_mul).
void launch_gemv_gelu_mul(const void* x, const void* w, void* out, int64_t m, int64_t inter, int64_t k,
                          cudaStream_t stream);
void launch_gemv_gelu_mul_aux(const void* x, const void* w, const void* aux, void* out, int64_t m, int64_t n,
                              int64_t k, cudaStream_t stream);

// The kernel shape (tensor-core rows and shape, K split, streaming, L2 prefetch) follows the
// installed kernel policy's `gemv` part (kernel_policy.h); every shape gives the same bits.

}  // namespace gs::cuda
