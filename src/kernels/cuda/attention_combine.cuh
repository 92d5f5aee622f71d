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
// outputs (same code, same order). The split weights of a row are computed once (a warp, splits
// lane, lane + 32, ...) and kept in shared memory; the column sums then issue independent loads
// per split.
#pragma once
#include <cuda_bf16.h>

#include "kernels/cuda/attention_params.cuh"

namespace gs::cuda::attn {

constexpr int kMaxCombineSplits = kMaxAttentionSplits;
constexpr int kCombineSplitsPerLane = kMaxCombineSplits / 32;  // of the warp in combine_weights

// Split weights of packed output row `row`, computed by one whole warp (lane l: splits l, l + 32,
// ...): w[s] = 2^(m_s − M) (0 for a split that saw no key) and *inv = 1 / Σ_s w[s]·l_s, the sum
// taken as each lane's splits in order and then a warp sum: a fixed order, and both combines call
// this, so they agree bit for bit. Partials are read with ld.global.cg (L2, not L1): in the fused
// path other CTAs wrote them.
__device__ __forceinline__ void combine_weights(const TileArgs& a, int64_t row, float* w, float* inv) {
  const int lane = threadIdx.x & 31;
  const int64_t rows = int64_t(a.num_tokens) * a.num_q_heads;
  float m[kCombineSplitsPerLane], l[kCombineSplitsPerLane];
  float m_max = -INFINITY;
#pragma unroll
  for (int j = 0; j < kCombineSplitsPerLane; ++j) {
    const int s = lane + 32 * j;
    const bool has = s < a.num_splits;
    const int64_t prow = int64_t(s) * rows + row;
    m[j] = has ? __ldcg(a.part_ml + 2 * prow) : -INFINITY;
    l[j] = has ? __ldcg(a.part_ml + 2 * prow + 1) : 0.f;
    m_max = fmaxf(m_max, m[j]);
  }
#pragma unroll
  for (int off = 16; off >= 1; off >>= 1) m_max = fmaxf(m_max, __shfl_xor_sync(0xffffffffu, m_max, off));
  float l_sum = 0.f;
#pragma unroll
  for (int j = 0; j < kCombineSplitsPerLane; ++j) {
    const int s = lane + 32 * j;
    const float ws = (m_max != -INFINITY && m[j] != -INFINITY) ? exp2f(m[j] - m_max) : 0.f;
    if (s < a.num_splits) w[s] = ws;
    l_sum = fmaf(ws, l[j], l_sum);
  }
#pragma unroll
  for (int off = 16; off >= 1; off >>= 1) l_sum += __shfl_xor_sync(0xffffffffu, l_sum, off);
  if (lane == 0) *inv = l_sum > 0.f ? 1.f / l_sum : 0.f;
  __syncwarp();
}

// acc += ws · o, the step of a column quad's sum (kept in one place: both combines add in split order
// with exactly these operations, so their outputs are bit-identical).
__device__ __forceinline__ void combine_add(float4& acc, float ws, const float4& o) {
  acc.x = fmaf(ws, o.x, acc.x), acc.y = fmaf(ws, o.y, acc.y);
  acc.z = fmaf(ws, o.z, acc.z), acc.w = fmaf(ws, o.w, acc.w);
}

// Columns [col, col + 4) of row `row` scaled by inv, as bf16.
template <int HD>
__device__ __forceinline__ void combine_store(const TileArgs& a, int64_t row, int col, const float4& acc, float inv) {
  __nv_bfloat162 lo = __floats2bfloat162_rn(acc.x * inv, acc.y * inv);
  __nv_bfloat162 hi = __floats2bfloat162_rn(acc.z * inv, acc.w * inv);
  uint2 packed;
  packed.x = *reinterpret_cast<uint32_t*>(&lo);
  packed.y = *reinterpret_cast<uint32_t*>(&hi);
  *reinterpret_cast<uint2*>(a.out + row * HD + col) = packed;
}

// Columns [col, col + 4) of row `row`: Σ_s w[s]·O_s · inv, in split order, written as bf16.
template <int HD>
__device__ __forceinline__ void combine_cols(const TileArgs& a, int64_t row, int col, const float* w, float inv) {
  const int64_t rows = int64_t(a.num_tokens) * a.num_q_heads;
  float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
  // Unrolled by 8: the loads of 8 splits are in flight at once (the sum still runs in split order).
  // With 4, a batch-1 hd512 combine of 32 splits was a chain of 8 L2 round trips per column quad.
#pragma unroll 8
  for (int s = 0; s < a.num_splits; ++s) {
    const float ws = w[s];
    // Loaded whatever the weight (the address is valid), so the unrolled loads need no branch; a
    // split that saw no key adds nothing, not 0 · (whatever it left there).
    const float4 o = __ldcg(reinterpret_cast<const float4*>(a.part_o + (s * rows + row) * HD + col));
    if (ws == 0.f) continue;
    combine_add(acc, ws, o);
  }
  combine_store<HD>(a, row, col, acc, inv);
}

// Called by every thread of a split CTA after it wrote its partials (a.split_counters set and
// num_splits > 1). Rows [row0, row0 + BM) of the packed rows of sequence `seq` (tokens from q0,
// `rows` packed rows in all), KV head kvh; the grid is (q_tiles, kv_heads · splits, seqs).
// `scratch`: BM · (kMaxCombineSplits + 1) floats of shared memory the kernel no longer uses.
template <int HD, int BM, int NT>
__device__ __forceinline__ void combine_if_last(const TileArgs& a, int seq, int q_tile, int kvh, int row0, int rows,
                                                int q0, float* scratch) {
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
  constexpr int kStride = kMaxCombineSplits + 1;
  const int n = min(BM, rows - row0);
  auto packed_row = [&](int r) {
    const int pr = row0 + r;
    return int64_t(q0 + pr / a.group) * a.num_q_heads + kvh * a.group + pr % a.group;
  };
  for (int r = threadIdx.x >> 5; r < n; r += NT / 32) {
    float* sw = scratch + r * kStride;
    combine_weights(a, packed_row(r), sw, sw + kMaxCombineSplits);
  }
  __syncthreads();
  for (int i = threadIdx.x; i < n * (HD / 4); i += NT) {
    const int r = i / (HD / 4);
    const float* sw = scratch + r * kStride;
    combine_cols<HD>(a, packed_row(r), (i % (HD / 4)) * 4, sw, sw[kMaxCombineSplits]);
  }
}

}  // namespace gs::cuda::attn
