// The decode GEMV for weights too big for one wave of its blocks (gemv.cu decides): a warp group
// takes several units and its load ring runs on across them. Included by gemv.cu only.
#pragma once
#include "kernels/cuda/gemv_device.cuh"
#include "kernels/cuda/launch_util.h"

namespace gs::cuda::gemv_impl {

// Units: a warp group's kRowsPerWarp rows (per warp: its K share of them), as in gemv_kernel, which
// has one unit per group. Here the grid has at most one wave of blocks; block b's group g takes
// units (b + j·gridDim.x)·groups + g for j < units_per_group, and its lanes' load ring runs on from
// one unit's last chunks into the next unit's first, so a weight too big for one wave streams
// without blocks draining and starting between units. Every warp of a block makes the same number
// of steps (chunk steps past K and units past N skip their loads and drop their stores), so the
// ks > 1 reduction's block barriers line up. The sums are gemv_kernel's, in the same order: the
// two kernels give bit-identical outputs.
// kMinBlocks: blocks an SM the compiler must fit (0: as many as its registers allow, 5 at ~94).
template <int MT, int kStages, typename OutT, Epi E = Epi::Store, int kMinBlocks = 0>
__global__ void __launch_bounds__(kThreads, kMinBlocks)
    gemv_stream_kernel(const bf16* __restrict__ x, const bf16* __restrict__ w, OutT* __restrict__ out, int M, int N,
                       int K, int ks, uint32_t pf_row_bytes, const bf16* __restrict__ aux, int units_per_group) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int kpart = warp % ks, group = warp / ks, groups = kWarps / ks;
  const int C = K >> 3;
  const int stride = 32 * ks;
  const int steps = (C + stride - 1) / stride;  // chunk steps per unit, the same for every warp
  const int c0 = kpart * 32 + lane;             // this lane's chunk at step 0
  auto unit_of = [&](int j) { return (int(blockIdx.x) + j * int(gridDim.x)) * groups + group; };
  auto rows_of = [&](int j, const bf16* (&rows)[kRowsPerWarp]) {
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) rows[r] = w + int64_t(weight_row<E>(unit_of(j), r, N)) * K;
  };

  // The refill cursor: unit j_fill, step k_fill, and its rows.
  int j_fill = 0, k_fill = 0;
  const bf16* fill_rows[kRowsPerWarp];
  rows_of(0, fill_rows);
  // Units past the weight's rows (the last block's share when the units do not divide evenly)
  // load nothing; their rows are clamped to valid memory anyway.
  auto unit_valid = [&](int j) {
    return E == Epi::GeluMul ? unit_of(j) * 2 < (N >> 1) : unit_of(j) * kRowsPerWarp < N;
  };
  auto fill = [&](uint4 (&dst)[kRowsPerWarp]) {
    const int c = c0 + k_fill * stride;
    const bool ok = j_fill < units_per_group && c < C && unit_valid(j_fill);
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) dst[r] = ok ? ld_weight(fill_rows[r] + int64_t(c) * 8) : make_uint4(0, 0, 0, 0);
    if (++k_fill == steps) {
      k_fill = 0;
      if (++j_fill < units_per_group) rows_of(j_fill, fill_rows);
    }
  };

  // ---- before the wait: weights only ----
  uint4 wb[kStages][kRowsPerWarp];
#pragma unroll
  for (int s = 0; s < kStages; ++s) fill(wb[s]);
  prefetch_unit_rows<E, kStages>(w, unit_of(0), N, K, stride, pf_row_bytes, kpart, lane);

  pdl_wait();
  pdl_launch_dependents();

  float acc[kRowsPerWarp][MT];
  zero(acc);

  // The consume cursor: unit j, step k.
  int j = 0, k = 0;
  const int total = units_per_group * steps;
  for (int i = 0; i < total; i += kStages) {
#pragma unroll
    for (int s = 0; s < kStages; ++s) {
      if (i + s < total) {
        const int cs = c0 + k * stride;
        float wf[kRowsPerWarp][8];
#pragma unroll
        for (int r = 0; r < kRowsPerWarp; ++r) unpack8(wb[s][r], wf[r]);
        // Refill this stage kStages steps further on (possibly the next unit) before the
        // arithmetic, so the loads are in flight while it runs.
        fill(wb[s]);
        if (cs < C) accumulate_chunk<MT>(acc, wf, x, M, K, cs);
        if (++k == steps) {
          k = 0;
          finish_unit<MT, OutT, E, true>(acc, out, aux, M, N, unit_of(j++), ks, kpart, warp, lane);
        }
      }
    }
  }
}

}  // namespace gs::cuda::gemv_impl
