// The decode GEMV on tensor cores, for 3-16 rows (gemv.cu; the backend sends it 3-8 rows on small
// weights), and in 16-row tiles (grid y) for any row count under the batch-invariant policy.
// Included by gemv.cu only.
#pragma once
#include "kernels/cuda/attention_mma.cuh"
#include "kernels/cuda/gemv_device.cuh"
#include "kernels/cuda/launch_util.h"

namespace gs::cuda::gemv_impl {

// For M above two rows the FMA kernel runs out of issue slots (64·M FMAs per 16-byte weight chunk
// per lane), so this one does the dot products with mma.sync m16n8k16: A = x (16 rows m, rows >= M
// zero), B = w^T (k16 x n8: 8 weight rows a tile), f32 accumulators.
//
// The weights reach the fragments through shared memory. mma.sync wants lane (g = lane/4,
// p = lane%4) to hold row g of a tile, so loading fragments straight from global memory makes every
// warp load touch 8 rows x 64 bytes, which streams at about half the FMA kernel's rate
// (docs/kernel-policy.md, "GEMV tensor-core shape"). Here each warp copies whole 512-byte row pieces (lane L: chunk L of each of its rows) into its own
// ring of kStages shared-memory stages with cp.async, and reads them back in fragment order. The
// stages before the PDL wait are weights only, as in the FMA kernel, but held in shared memory
// instead of registers.
//
// The fragment map: a dot product does not care in which order k is summed, so an mma's "logical"
// k may map to any actual k as long as A and B use the same map. In round j of a stage, lane (g, p)
// takes 16-byte chunk 4j + p of its weight rows and the same chunk of x rows g and g + 8; its four
// bf16 pairs feed two mma k-steps (pairs 0,1 then 2,3). For every logical k the 8 lanes with the
// same p read the same actual k, which is all the fragment layout needs. Each accumulator ends
// complete for one (m, n): no shuffles.
//
// Stage layout: [8·kTiles rows][32 chunks], chunk c of row r at c ^ ((r & 7) << 2): the 8 lanes of
// a read phase (two rows, four chunks) fall on 8 distinct 16-byte bank groups.
constexpr int kMmaRowsPerTile = 8;
constexpr int kMmaStageChunks = 32;  // chunks per row a stage holds (a warp's 32 lanes, one each)

template <int kStages, int kTiles>
constexpr size_t mma_smem_bytes() {
  return size_t(kWarps) * kStages * kTiles * kMmaRowsPerTile * kMmaStageChunks * 16;
}

__device__ __forceinline__ int mma_swizzle(int r, int c) { return c ^ ((r & 7) << 2); }

// The weight row behind row r of a warp's stage (unit: the warp's index in the grid). Store and
// GeluMulAux: 8·kTiles consecutive rows. GeluMul (N = 2I, two tiles): gate rows j..j+7 in tile 0
// and the matching up rows I+j.. in tile 1, so a lane's two accumulators of one (m, n) are both
// factors of one output. Rows past the end read the last valid one (never stored).
template <Epi E, int kTiles>
__device__ __forceinline__ int mma_weight_row(int unit, int r, int N) {
  if constexpr (E == Epi::GeluMul) {
    static_assert(kTiles == 2, "GeluMul pairs a gate tile with an up tile");
    const int I = N >> 1, j = min(unit * kMmaRowsPerTile + (r & 7), I - 1);
    return r < kMmaRowsPerTile ? j : I + j;
  } else {
    return min(unit * kMmaRowsPerTile * kTiles + r, N - 1);
  }
}

// kHigh: M > 8, so x rows g+8 are loaded too (otherwise they are zero).
// E: the FMA kernel's epilogues (gemv_device.cuh), with the same roundings; aux is GeluMulAux's
// second factor ([M, N]), read after the wait.
// kRowTiles (the batch-invariant policy's form): grid y runs 16-row tiles of any M. A compile-time
// switch: in the default kernel the tile offsets alone cost 4-8 row steps ~8% (H200, 2026-11-29:
// E2B's 4-row step 2.59 ms with them, 2.38 without; E4B's 4.21 and 3.88).
template <bool kHigh, int kStages, int kTiles, typename OutT, Epi E = Epi::Store, bool kRowTiles = false>
__global__ void __launch_bounds__(kThreads) gemv_mma_kernel(const bf16* __restrict__ x, const bf16* __restrict__ w,
                                                            OutT* __restrict__ out, int M, int N, int K, int ks,
                                                            const bf16* __restrict__ aux) {
  // Row tile y: rows 16·y.. of x, out and aux; M counts the tile's rows. A row's accumulators see
  // only its own x row and the same K order whatever the tile holds, so its bits do not depend on
  // M (the batch-invariant policy relies on this; gemv.h).
  if constexpr (kRowTiles) {
    const int64_t m0 = int64_t(blockIdx.y) * 16;
    const int64_t out_cols = E == Epi::GeluMul ? N / 2 : N;
    x += m0 * K;
    out += m0 * out_cols;
    if (aux) aux += m0 * N;
    M = min(M - int(m0), 16);
  }
  constexpr int kRows = kMmaRowsPerTile * kTiles;
  constexpr int kStageChunks = kRows * kMmaStageChunks;
  extern __shared__ uint4 gemv_mma_ring[];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, p = lane & 3;
  const int kpart = warp % ks, group = warp / ks, groups = kWarps / ks;
  const int unit = blockIdx.x * groups + group;
  const int C = K >> 3;
  // The warp's stages: chunks first + i·step + (0..31), i = 0..n-1.
  const int first = kpart * kMmaStageChunks, step = kMmaStageChunks * ks;
  const int n = first < C ? (C - first + step - 1) / step : 0;
  uint4* ring = gemv_mma_ring + size_t(warp) * kStages * kStageChunks;

  auto issue = [&](int i) {
    uint4* stage = ring + (i % kStages) * kStageChunks;
    const int c = first + i * step + lane;
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const bf16* src = w + int64_t(mma_weight_row<E, kTiles>(unit, r, N)) * K + int64_t(min(c, C - 1)) * 8;
      attn::cp_async16(stage + r * kMmaStageChunks + mma_swizzle(r, lane), src, c < C);
    }
  };

  // ---- before the wait: weights only ----
#pragma unroll
  for (int i = 0; i < kStages - 1; ++i) {
    if (i < n) issue(i);
    attn::cp_async_commit();  // always commit: group i holds stage i
  }

  pdl_wait();
  pdl_launch_dependents();

  const bool lo = g < M, hi = kHigh && g + 8 < M;
  const bf16* xlo = x + int64_t(lo ? g : 0) * K;
  const bf16* xhi = x + int64_t(hi ? g + 8 : 0) * K;
  const uint4 zero = make_uint4(0, 0, 0, 0);
  float acc[kTiles][4] = {};
  for (int i = 0; i < n; ++i) {
    if (i + kStages - 1 < n) issue(i + kStages - 1);
    attn::cp_async_commit();
    attn::cp_async_wait<kStages - 1>();  // stage i landed (this lane's copies)
    __syncwarp();                        // ... and every lane's
    const uint4* stage = ring + (i % kStages) * kStageChunks;
    const int base = first + i * step;
#pragma unroll
    for (int j = 0; j < kMmaStageChunks / 4; ++j) {
      const int ch = base + 4 * j + p;
      const bool ok = ch < C;
      const uint4 xl = ok && lo ? *reinterpret_cast<const uint4*>(xlo + int64_t(ch) * 8) : zero;
      const uint4 xh = ok && hi ? *reinterpret_cast<const uint4*>(xhi + int64_t(ch) * 8) : zero;
      const uint32_t a01[4] = {xl.x, xh.x, xl.y, xh.y}, a23[4] = {xl.z, xh.z, xl.w, xh.w};
#pragma unroll
      for (int t = 0; t < kTiles; ++t) {
        const int r = t * kMmaRowsPerTile + g;
        const uint4 wv = stage[r * kMmaStageChunks + mma_swizzle(r, 4 * j + p)];
        attn::mma_bf16_16816(acc[t], a01, wv.x, wv.y);
        attn::mma_bf16_16816(acc[t], a23, wv.z, wv.w);
      }
    }
    __syncwarp();  // every lane is done with the stage before it is refilled
  }

  if (ks > 1) {
    // The ring is idle now; its first bytes carry the partial sums.
    __syncthreads();
    float* part = reinterpret_cast<float*>(gemv_mma_ring);  // [kWarps][32][kTiles·4]
#pragma unroll
    for (int t = 0; t < kTiles; ++t)
#pragma unroll
      for (int j = 0; j < 4; ++j) part[(warp * 32 + lane) * kTiles * 4 + t * 4 + j] = acc[t][j];
    __syncthreads();
    if (kpart != 0) return;
    for (int q = 1; q < ks; ++q)
#pragma unroll
      for (int t = 0; t < kTiles; ++t)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[t][j] += part[((warp + q) * 32 + lane) * kTiles * 4 + t * 4 + j];
  }

  // C fragment of tile t: acc[t][0..1] = (m g, n 2p..2p+1), acc[t][2..3] = (m g+8, same n).
  // The activations round as the unfused ops do (finish_unit in gemv_device.cuh).
  if constexpr (E == Epi::GeluMul) {
    const int I = N >> 1;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int m = g + (j >> 1) * 8, n = unit * kMmaRowsPerTile + 2 * p + (j & 1);
      if (m < M && n < I) {
        const float gate = rnd<bf16>(acc[0][j]), up = rnd<bf16>(acc[1][j]);
        out[int64_t(m) * I + n] = from_f32<OutT>(rnd<bf16>(gelu_tanh(gate)) * up);
      }
    }
  } else {
    const int row0 = unit * kRows;
#pragma unroll
    for (int t = 0; t < kTiles; ++t)
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int m = g + (j >> 1) * 8, n = row0 + t * kMmaRowsPerTile + 2 * p + (j & 1);
        if (m < M && n < N) {
          const int64_t i = int64_t(m) * N + n;
          if constexpr (E == Epi::Store) out[i] = from_f32<OutT>(acc[t][j]);
          else out[i] = from_f32<OutT>(rnd<bf16>(gelu_tanh(rnd<bf16>(acc[t][j]))) * to_f32(aux[i]));
        }
      }
  }
}

}  // namespace gs::cuda::gemv_impl
