// Merging split-KV partials. Split s of a row holds unnormalised O_s, its running max m_s (log2
// domain) and sum l_s; with M = max_s m_s the row is Σ 2^(m_s−M)·O_s / Σ 2^(m_s−M)·l_s. Splits
// that saw no visible key (m_s = −inf, l_s = 0) drop out. The splits are always summed in split
// order, so the result does not depend on which CTA finished last.
//
// Two users: the standalone combine kernel (attention_combine.cu) and the fused combine at the
// end of the tile and decode kernels (combine_if_last): every split CTA writes its partials,
// fences, and bumps a counter of its (sequence, row tile, KV head); the CTA that brings it to
// num_splits merges the tile's rows and puts the counter back to zero, so the next launch (or the
// next replay of a captured graph) finds it zeroed without a memset. Both compute bit-identical
// outputs (same code, same order).
#pragma once
#include <cuda_bf16.h>

#include "kernels/cuda/attention_params.cuh"

namespace gs::cuda::attn {

// Columns [col, col + 4) of packed output row `row` (t·Nq + head). Partials are read with
// ld.global.cg (L2, not L1): in the fused path they were written by other CTAs.
template <int HD>
__device__ __forceinline__ void combine_row_cols(const TileArgs& a, int64_t row, int col) {
  const int64_t rows = int64_t(a.num_tokens) * a.num_q_heads;
  float m_max = -INFINITY;
  for (int s = 0; s < a.num_splits; ++s) m_max = fmaxf(m_max, __ldcg(a.part_ml + 2 * (s * rows + row)));
  float l = 0.f;
  float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
  if (m_max != -INFINITY) {
    for (int s = 0; s < a.num_splits; ++s) {
      const int64_t prow = s * rows + row;
      const float m = __ldcg(a.part_ml + 2 * prow);
      if (m == -INFINITY) continue;
      const float w = exp2f(m - m_max);
      l += w * __ldcg(a.part_ml + 2 * prow + 1);
      const float4 o = __ldcg(reinterpret_cast<const float4*>(a.part_o + prow * HD + col));
      acc.x += w * o.x, acc.y += w * o.y, acc.z += w * o.z, acc.w += w * o.w;
    }
  }
  const float inv = l > 0.f ? 1.f / l : 0.f;
  __nv_bfloat162 lo = __floats2bfloat162_rn(acc.x * inv, acc.y * inv);
  __nv_bfloat162 hi = __floats2bfloat162_rn(acc.z * inv, acc.w * inv);
  uint2 packed;
  packed.x = *reinterpret_cast<uint32_t*>(&lo);
  packed.y = *reinterpret_cast<uint32_t*>(&hi);
  *reinterpret_cast<uint2*>(a.out + row * HD + col) = packed;
}

// Called by every thread of a split CTA after it wrote its partials (a.split_counters set and
// num_splits > 1). Rows [row0, row0 + BM) of the packed rows of sequence `seq` (tokens from q0,
// `rows` packed rows in all), KV head kvh; the grid is (q_tiles, kv_heads · splits, seqs).
template <int HD, int BM, int NT>
__device__ __forceinline__ void combine_if_last(const TileArgs& a, int seq, int q_tile, int kvh, int row0, int rows,
                                                int q0) {
  __shared__ int s_last;
  __threadfence();  // this thread's partials are visible device-wide before the counter moves
  __syncthreads();
  if (threadIdx.x == 0) {
    const int kv_heads = gridDim.y / a.num_splits;
    int* ctr = a.split_counters + (int64_t(seq) * gridDim.x + q_tile) * kv_heads + kvh;
    const int last = atomicAdd(ctr, 1) == a.num_splits - 1;
    if (last) atomicExch(ctr, 0);  // every split of this launch has arrived: ready for the next one
    s_last = last;
  }
  __syncthreads();
  if (!s_last) return;
  __threadfence();  // the other splits' partials, published before their increments
  const int n = min(BM, rows - row0);
  for (int i = threadIdx.x; i < n * (HD / 4); i += NT) {
    const int pr = row0 + i / (HD / 4), col = (i % (HD / 4)) * 4;
    const int t = q0 + pr / a.group, head = kvh * a.group + pr % a.group;
    combine_row_cols<HD>(a, int64_t(t) * a.num_q_heads + head, col);
  }
}

}  // namespace gs::cuda::attn
