// The decode GEMV on tensor cores (off by default, gemv.cu). Included by gemv.cu only.
#pragma once
#include "kernels/cuda/attention_mma.cuh"
#include "kernels/cuda/gemv_device.cuh"
#include "kernels/cuda/launch_util.h"

namespace gs::cuda::gemv_impl {

// For M above a few rows the FMA kernel above runs out of issue slots (64·M FMAs per 16-byte
// weight chunk per lane), so this one does the dot products with mma.sync m16n8k16: A = x (16
// rows m, rows >= M zero), B = w^T (k16 x n8: 8 weight rows per warp), f32 accumulators.
//
// The trick that keeps the loads 16 bytes wide: a dot product does not care in which order k is
// summed, so an mma's "logical" k may map to any actual k as long as A and B use the same map.
// Lane (g = lane/4, p = lane%4) loads the 16-byte chunk ch = base + p of weight row g and the same
// chunk of x rows g and g+8; its four bf16 pairs feed two mma k-steps (pairs 0,1 then 2,3). For
// every logical k the 8 lanes with the same p read the same actual k, which is all the fragment
// layout needs. Each accumulator ends complete for one (m, n): no shuffles.
constexpr int kMmaRowsPerWarp = 8;
constexpr int kMmaStages = 8;  // chunks each lane has in flight: 128 B

// kHigh: M > 8, so x rows g+8 are loaded too (otherwise they are zero).
template <bool kHigh, typename OutT>
__global__ void __launch_bounds__(kThreads) gemv_mma_kernel(const bf16* __restrict__ x, const bf16* __restrict__ w,
                                                            OutT* __restrict__ out, int M, int N, int K, int ks,
                                                            uint32_t pf_row_bytes) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, p = lane & 3;
  const int kpart = warp % ks, group = warp / ks, groups = kWarps / ks;
  const int row0 = (blockIdx.x * groups + group) * kMmaRowsPerWarp;
  const int C = K >> 3;
  const int stride = 4 * ks;  // chunks between a warp's consecutive k-steps
  const bf16* wrow = w + int64_t(min(row0 + g, N - 1)) * K;
  const uint4 zero = make_uint4(0, 0, 0, 0);

  // ---- before the wait: weights only ----
  int b = kpart * 4;  // warp-uniform chunk base; the lane's chunk is b + p
  uint4 wb[kMmaStages];
#pragma unroll
  for (int s = 0; s < kMmaStages; ++s) {
    const int ch = b + s * stride + p;
    wb[s] = ch < C ? ld_weight(wrow + int64_t(ch) * 8) : zero;
  }
  if (pf_row_bytes && kpart == 0 && p == 0 && row0 + g < N) {
    const uint32_t skip = uint32_t(kMmaStages * stride * 16), row_bytes = uint32_t(K) * 2;
    const uint32_t end = min(pf_row_bytes, row_bytes);
    if (end > skip) prefetch_l2(reinterpret_cast<const char*>(wrow) + skip, end - skip);
  }

  pdl_wait();
  pdl_launch_dependents();

  const bool lo = g < M, hi = kHigh && g + 8 < M;
  const bf16* xlo = x + int64_t(lo ? g : 0) * K;
  const bf16* xhi = x + int64_t(hi ? g + 8 : 0) * K;
  float acc[4] = {0.f, 0.f, 0.f, 0.f};
  for (; b < C; b += kMmaStages * stride) {
#pragma unroll
    for (int s = 0; s < kMmaStages; ++s) {
      const int bs = b + s * stride;
      if (bs < C) {  // warp-uniform: mma needs the whole warp
        const int ch = bs + p;
        const bool ok = ch < C;
        const uint4 xl = ok && lo ? *reinterpret_cast<const uint4*>(xlo + int64_t(ch) * 8) : zero;
        const uint4 xh = ok && hi ? *reinterpret_cast<const uint4*>(xhi + int64_t(ch) * 8) : zero;
        const uint4 wv = wb[s];
        const int cn = ch + kMmaStages * stride;
        wb[s] = cn < C ? ld_weight(wrow + int64_t(cn) * 8) : zero;
        const uint32_t a01[4] = {xl.x, xh.x, xl.y, xh.y}, a23[4] = {xl.z, xh.z, xl.w, xh.w};
        attn::mma_bf16_16816(acc, a01, wv.x, wv.y);
        attn::mma_bf16_16816(acc, a23, wv.z, wv.w);
      }
    }
  }

  if (ks > 1) {
    __shared__ float part[kWarps][32][4];
#pragma unroll
    for (int j = 0; j < 4; ++j) part[warp][lane][j] = acc[j];
    __syncthreads();
    if (kpart != 0) return;
    for (int q = 1; q < ks; ++q)
#pragma unroll
      for (int j = 0; j < 4; ++j) acc[j] += part[warp + q][lane][j];
  }

  // C fragment: acc[0..1] = (m g, n 2p..2p+1), acc[2..3] = (m g+8, same n).
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const int m = g + (j >> 1) * 8, n = row0 + 2 * p + (j & 1);
    if (m < M && n < N) out[int64_t(m) * N + n] = from_f32<OutT>(acc[j]);
  }
}

}  // namespace gs::cuda::gemv_impl
