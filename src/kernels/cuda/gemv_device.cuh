// Device parts of the decode GEMV (gemv.cu) that its kernels share: the block layout's constants,
// the epilogues, the weight loads and a unit's end (warp sums, the K split's partials, the stores).
// Included by gemv.cu only.
#pragma once
#include <cuda_bf16.h>

#include <cstdint>

#include "kernels/cuda/device_math.cuh"

namespace gs::cuda::gemv_impl {

constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;
constexpr int kRowsPerWarp = 4;  // weight rows per warp group

// What the FMA kernel does with its dot products (gemv.h): store them, or apply a Gemma MLP's
// activation first.
enum class Epi { Store, GeluMul, GeluMulAux };

// The weight row that a warp group's accumulator r reads. Store and GeluMulAux: kRowsPerWarp
// consecutive rows. GeluMul (N = 2I): two gate rows j, j+1 and the matching up rows I+j, I+j+1, so
// the group holds both factors of its two outputs. Rows past the end read the last valid row
// (valid memory, never stored): no predication in the loop.
template <Epi E>
__device__ __forceinline__ int weight_row(int unit, int r, int N) {
  if constexpr (E == Epi::GeluMul) {
    const int I = N >> 1, j = min(unit * 2 + (r & 1), I - 1);
    return r < 2 ? j : I + j;
  } else {
    return min(unit * kRowsPerWarp + r, N - 1);
  }
}

// Weights are read once: no L1 allocation, non-coherent path (they never change). volatile keeps
// the loads issued before pdl_wait(), which is itself a volatile asm.
__device__ __forceinline__ uint4 ld_weight(const bf16* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

__device__ __forceinline__ void prefetch_l2(const void* p, uint32_t bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p), "r"(bytes) : "memory");
#endif
}

// `raw` by value: from a reference into memory the compiler reads the four pairs as separate
// 4-byte loads (ld.v2.u16) instead of one 16-byte load.
__device__ __forceinline__ void unpack8(const uint4 raw, float (&f)[8]) {
  const __nv_bfloat162* p = reinterpret_cast<const __nv_bfloat162*>(&raw);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    float2 t = __bfloat1622float2(p[i]);
    f[2 * i] = t.x;
    f[2 * i + 1] = t.y;
  }
}

// Before the wait: lanes 0..kRowsPerWarp-1 of a group's first warp ask L2 for up to pf_row_bytes
// of their row of `unit`, past the first kStages·stride chunks that the register loads cover.
template <Epi E, int kStages>
__device__ __forceinline__ void prefetch_unit_rows(const bf16* w, int unit, int N, int K, int stride,
                                                   uint32_t pf_row_bytes, int kpart, int lane) {
  if (!pf_row_bytes || kpart != 0 || lane >= kRowsPerWarp || unit * kRowsPerWarp + lane >= N) return;
  const uint32_t skip = uint32_t(kStages * stride * 16), row_bytes = uint32_t(K) * 2;
  const uint32_t end = min(pf_row_bytes, row_bytes);
  const bf16* row = w + int64_t(weight_row<E>(unit, lane, N)) * K;
  if (end > skip) prefetch_l2(reinterpret_cast<const char*>(row) + skip, end - skip);
}

template <int MT>
__device__ __forceinline__ void zero(float (&acc)[kRowsPerWarp][MT]) {
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r)
#pragma unroll
    for (int m = 0; m < MT; ++m) acc[r][m] = 0.f;
}

// acc[r][m] += the dot product of weight chunk wf[r] (8 values) with chunk cs of x row m, m < M.
template <int MT>
__device__ __forceinline__ void accumulate_chunk(float (&acc)[kRowsPerWarp][MT], const float (&wf)[kRowsPerWarp][8],
                                                 const bf16* __restrict__ x, int M, int K, int cs) {
#pragma unroll
  for (int m = 0; m < MT; ++m) {
    if (m < M) {
      float xf[8];
      unpack8(*reinterpret_cast<const uint4*>(x + int64_t(m) * K + int64_t(cs) * 8), xf);
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r)
#pragma unroll
        for (int e = 0; e < 8; ++e) acc[r][m] = fmaf(wf[r][e], xf[e], acc[r][m]);
    }
  }
}

// A unit's end: the warp sums, the ks > 1 partials met in shared memory, the epilogue's stores.
// Every warp of the block calls it at the same step. kReuse: another unit follows, so the
// partials' buffer is freed by a second barrier and acc is zeroed.
template <int MT, typename OutT, Epi E, bool kReuse>
__device__ __forceinline__ void finish_unit(float (&acc)[kRowsPerWarp][MT], OutT* __restrict__ out,
                                            const bf16* __restrict__ aux, int M, int N, int unit, int ks, int kpart,
                                            int warp, int lane) {
  const int row0 = unit * kRowsPerWarp;
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r)
#pragma unroll
    for (int m = 0; m < MT; ++m)
      if (m < M) acc[r][m] = warp_sum(acc[r][m]);

  bool store = true;
  if (ks > 1) {
    // The group's ks warps each hold a partial sum over their share of K; the first adds the
    // others' in a fixed order (deterministic for a given shape).
    __shared__ float part[kWarps][kRowsPerWarp][MT];
    if (lane == 0)
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r)
#pragma unroll
        for (int m = 0; m < MT; ++m) part[warp][r][m] = acc[r][m];
    __syncthreads();
    if (kpart == 0) {
      for (int p = 1; p < ks; ++p)
#pragma unroll
        for (int r = 0; r < kRowsPerWarp; ++r)
#pragma unroll
          for (int m = 0; m < MT; ++m) acc[r][m] += part[warp + p][r][m];
    } else {
      store = false;
    }
    if constexpr (kReuse) __syncthreads();  // part is rewritten by the next unit
  }

  // Every lane holds every sum; lane (r·MT + m) mod 32 stores output (m, r). The activations round
  // as the unfused ops do: each product to bf16 (the matmul's output), gelu(gate) again (GeluMulOp).
  if (store) {
    if constexpr (E == Epi::Store) {
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r)
#pragma unroll
        for (int m = 0; m < MT; ++m)
          if ((r * MT + m) % 32 == lane && m < M && row0 + r < N)
            out[int64_t(m) * N + row0 + r] = from_f32<OutT>(acc[r][m]);
    } else if constexpr (E == Epi::GeluMul) {
      const int I = N >> 1;
#pragma unroll
      for (int r = 0; r < 2; ++r)
#pragma unroll
        for (int m = 0; m < MT; ++m)
          if ((r * MT + m) % 32 == lane && m < M && unit * 2 + r < I) {
            const float g = rnd<bf16>(acc[r][m]), u = rnd<bf16>(acc[r + 2][m]);
            out[int64_t(m) * I + unit * 2 + r] = from_f32<OutT>(rnd<bf16>(gelu_tanh(g)) * u);
          }
    } else {
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r)
#pragma unroll
        for (int m = 0; m < MT; ++m)
          if ((r * MT + m) % 32 == lane && m < M && row0 + r < N) {
            const int64_t i = int64_t(m) * N + row0 + r;
            out[i] = from_f32<OutT>(rnd<bf16>(gelu_tanh(rnd<bf16>(acc[r][m]))) * to_f32(aux[i]));
          }
    }
  }
  if constexpr (kReuse) zero(acc);
}

}  // namespace gs::cuda::gemv_impl
