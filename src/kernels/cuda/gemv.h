// Skinny GEMMs for decode: out[M,N] = x[M,K] · w[N,K]ᵀ for M <= kGemvMaxRows, bf16 operands, f32
// accumulation, bf16 or f32 out. At these M every projection of a decode step is a weight stream
// (E2B's are 1.5-40 MB, 31B's 40-460 MB) and cuBLASLt spends most of a small one ramping up. This
// kernel reads every weight byte once with 16-byte loads, each warp's dot products whole (no
// split-K reduction kernel), and issues its first weight loads before pdl_wait(): weights do not
// depend on the previous kernel, so under PDL they stream while that kernel finishes.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "core/dtype.h"

namespace gs::cuda {

// The largest M the GEMV takes. The cuda backend sends it only M <= GS_GEMV_MAX_M (default 1) and
// the weights it measured faster on (cuda_backend.cpp); everything else goes to cuBLASLt.
constexpr int kGemvMaxRows = 16;

// True when launch_gemv accepts these operands: 1 <= M <= kGemvMaxRows, K a multiple of 8,
// x and w 16-byte aligned, out bf16 or f32.
bool gemv_supported(int64_t m, int64_t n, int64_t k, DType out_dtype, const void* x, const void* w);

// x: bf16 [M,K] (row stride K); w: bf16 [N,K]; out: [M,N] of out_dtype (bf16 or f32).
// Launched through launch_pdl (launch_util.h).
void launch_gemv(const void* x, const void* w, void* out, DType out_dtype, int64_t m, int64_t n, int64_t k,
                 cudaStream_t stream);

// Knobs for benchmarks only (the defaults are what the backend runs): the bytes of each weight
// row the block asks L2 to prefetch before its wait (cp.async.bulk.prefetch), as a total budget
// over the blocks resident at once; 0 turns the L2 prefetch off.
void gemv_set_l2_prefetch_budget(int64_t bytes);
// M from which the tensor-core variant runs instead of the FMA one (kGemvMaxRows + 1: never).
void gemv_set_mma_min_rows(int m);

}  // namespace gs::cuda
