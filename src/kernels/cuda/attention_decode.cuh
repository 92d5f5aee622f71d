// Decode tile kernel with the head dim split over the warps ("split d"): one CTA of 16 packed
// query rows (one m16 tile: all query heads of a KV head at decode) against a range of key tiles
// of one KV head, K/V gathered through the page table with cp.async, STAGES deep.
//
// Why another kernel. The 1x4-warp narrow tile kernel (attention_tile.cuh) splits S = Q·Kᵀ over
// its warps by keys, so at head dim 512 each warp's S is one n8 accumulator fed by a chain of 32
// dependent mma.sync, and every warp re-reads all of Q (16 KB) from shared memory for every key
// tile; its 145 KB CTA leaves 4 warps per SM. Here NW warps (8) split *both* products by head-dim
// columns:
//   S: warp w computes the partial scores of all BN keys over dims [w·d/NW, (w+1)·d/NW): its
//      slice of Q lives in registers for the whole kernel (16 registers at d 512), its K reads are
//      the tile's K read once, and its BN/8 accumulators are independent chains of d/(16·NW);
//   the NW partials meet in shared memory; warp w then owns rows {w, w+NW}: it sums the
//      partials of its rows, masks, runs the online softmax and writes P (bf16) and the rescale
//      factor of each row;
//   O += P·V: warp w accumulates output columns [w·d/NW, (w+1)·d/NW) (the tile's V read once).
// Three barriers per key tile. Every warp issues its share of the next tile's copies right after
// the first barrier, so STAGES − 1 tiles are in flight while one is computed.
//
// Masks, key ranges, splits and the partial layout are those of attention_tile.cuh (any q_len,
// the vision overlay included; prefill shapes work, just slowly), so the two kernels are
// interchangeable for the dispatcher and the tests.
#pragma once
#include <cuda_bf16.h>

#include <atomic>
#include <climits>
#include <cstdint>

#include "kernels/cuda/attention_combine.cuh"
#include "kernels/cuda/attention_cta.cuh"
#include "kernels/cuda/attention_mma.cuh"
#include "kernels/cuda/attention_params.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launch_util.h"

namespace gs::cuda::attn {

template <int HD, int NW, int BN, int STAGES>
struct DecodeConfig {
  static constexpr int kHeadDim = HD;
  static constexpr int kBlockM = 16;
  static constexpr int kBlockN = BN;
  static constexpr int kStages = STAGES;
  static constexpr int kWarps = NW;
  static constexpr int kThreads = 32 * NW;
  static constexpr int kChunks = HD / 8;             // 16-byte chunks in one head-dim row
  static constexpr int kDimsPerWarp = HD / NW;       // S contraction slice and O columns of one warp
  static constexpr int kKSteps = kDimsPerWarp / 16;  // k16 steps of a warp's S slice
  static constexpr int kSTiles = BN / 8;             // n8 accumulators of S per warp
  static constexpr int kOTiles = kDimsPerWarp / 8;
  static constexpr int kSStride = BN + 8;            // partial-S rows padded: conflict-free float2 stores
  static constexpr int kPStride = BN + 8;            // P rows padded by 16 bytes: conflict-free ldmatrix
  static constexpr int kRowsPerWarp = kBlockM / NW;  // softmax rows owned by one warp
  static constexpr size_t kSmemBytes =
      size_t(2) * STAGES * BN * HD * 2                 // K, V stages
      + size_t(NW) * kBlockM * kSStride * 4            // partial S of every warp
      + size_t(kBlockM) * kPStride * 2                 // P
      + size_t(3) * kBlockM * 4                        // row rescale, final max, final sum
      + size_t(2) * kBlockM * 4                        // row positions, row vision blocks
      + size_t(STAGES) * BN * 4;                       // key vision blocks per stage
  static_assert(BN == 16 || BN == 32, "a row's keys span 16 or 32 lanes of the softmax warp");
  static_assert(kKSteps >= 1 && kDimsPerWarp % 16 == 0, "whole k16 steps per warp");
  static_assert(kOTiles % 2 == 0, "P·V walks n8 pairs");
  static_assert(kBlockM % NW == 0 && (kRowsPerWarp * BN) % 32 == 0, "softmax rows split evenly");
  static_assert(kThreads % kChunks == 0 && (BN * kChunks) % kThreads == 0, "uniform chunk ownership");
  static_assert(STAGES >= 2, "double buffering at least");
};

template <class C>
__global__ void __launch_bounds__(C::kThreads, 1) attention_decode_kernel(const TileArgs a) {
  constexpr int HD = C::kHeadDim, BM = C::kBlockM, BN = C::kBlockN, ST = C::kStages, NW = C::kWarps;
  constexpr int NT = C::kThreads;
  using bf16 = __nv_bfloat16;

  extern __shared__ __align__(128) uint8_t smem[];
  bf16* sK = reinterpret_cast<bf16*>(smem);
  bf16* sV = sK + ST * BN * HD;
  float* sS = reinterpret_cast<float*>(sV + ST * BN * HD);  // [NW][BM][kSStride]
  bf16* sP = reinterpret_cast<bf16*>(sS + NW * BM * C::kSStride);
  float* sAlpha = reinterpret_cast<float*>(sP + BM * C::kPStride);
  float* sM = sAlpha + BM;
  float* sL = sM + BM;
  int* sRowPos = reinterpret_cast<int*>(sL + BM);
  int* sRowBlk = sRowPos + BM;
  int* sKeyBlk = sRowBlk + BM;

  // Before the PDL wait, as the tile kernel: placement, positions, the first cached K/V stages.
  const CtaPlace cta = cta_place(a, BM);
  if (cta.idle()) {
    pdl_enter();
    return;
  }

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;

  load_row_info(a, cta, BM, sRowPos, sRowBlk, tid, NT);
  // P rows of padding rows stay zero (their softmax is skipped).
  for (int i = tid; i < BM * C::kPStride / 2; i += NT) reinterpret_cast<uint32_t*>(sP)[i] = 0u;
  for (int r = tid; r < BM; r += NT) sAlpha[r] = 1.f;
  __syncthreads();

  const SplitStart start = start_split<HD, BN, NT, ST - 1>(a, cta, BM, sRowPos, sRowBlk, sK, sV, sKeyBlk, tid);
  const bool any_mm = start.span.any_mm;
  const int t_begin = start.tiles.begin, n_tiles = start.tiles.count;
  auto load_kv = [&](int tile, int stage) {
    load_kv_tile<HD, BN, NT>(a, cta, any_mm, tile, sK + stage * BN * HD, sV + stage * BN * HD, sKeyBlk + stage * BN,
                             tid);
  };

  pdl_enter();  // Q and this step's keys are the previous kernel's (qkv_prepare) output

  // This warp's slice of Q, straight from global memory into the m16k16 A layout:
  // a0 (row lane/4, cols 2·(lane%4)), a1 (row + 8), a2 (cols + 8), a3 (row + 8, cols + 8).
  uint32_t qf[C::kKSteps][4];
  {
    const bf16* qrow[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int pr = cta.row0 + (lane >> 2) + 8 * h;
      qrow[h] = nullptr;
      if (pr < cta.rows) {
        const int t = cta.q0 + pr / a.group, head = cta.kvh * a.group + pr % a.group;
        qrow[h] = a.q + (int64_t(t) * a.num_q_heads + head) * HD + warp * C::kDimsPerWarp + (lane & 3) * 2;
      }
    }
#pragma unroll
    for (int kk = 0; kk < C::kKSteps; ++kk)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const bf16* p = qrow[e & 1];
        qf[kk][e] = p ? *reinterpret_cast<const uint32_t*>(p + kk * 16 + (e >> 1) * 8) : 0u;
      }
  }

#pragma unroll
  for (int s = 0; s < ST - 1; ++s) {
    if (s < n_tiles && !((start.early >> s) & 1u)) load_kv(t_begin + s, s);
    cp_async_commit();  // always commit: group i holds tile i (group 0 also the tiles loaded early)
  }

  float o[C::kOTiles][4];
#pragma unroll
  for (int j = 0; j < C::kOTiles; ++j) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.f;

  // Softmax state of the rows this warp owns (row warp + NW·i), replicated over the lanes; the
  // row sum is kept per lane (its own key column) and reduced at the end.
  constexpr int kSmIters = C::kRowsPerWarp * BN / 32;  // lanes cover BN keys of 32/BN rows per pass
  constexpr int kRowsPerPass = 32 / BN;
  float m_run[kSmIters], l_run[kSmIters];
  int sm_row[kSmIters], sm_pos[kSmIters], sm_blk[kSmIters];
  bool sm_live[kSmIters];
  const int sm_key = lane % BN;
#pragma unroll
  for (int i = 0; i < kSmIters; ++i) {
    sm_row[i] = warp + NW * (i * kRowsPerPass + lane / BN);
    sm_pos[i] = sRowPos[sm_row[i]];
    sm_blk[i] = sRowBlk[sm_row[i]];
    sm_live[i] = cta.row0 + sm_row[i] < cta.rows;
    m_run[i] = -INFINITY, l_run[i] = 0.f;
  }
  const int r_lo = lane >> 2;

  for (int it = 0; it < n_tiles; ++it) {
    const int tile = t_begin + it, stage = it % ST;
    cp_async_wait<ST - 2>();
    __syncthreads();  // tile `it` landed for every thread; tile it - 1's stage is free
    if (it + ST - 1 < n_tiles) load_kv(tile + ST - 1, (it + ST - 1) % ST);
    cp_async_commit();
    const bf16* tK = sK + stage * BN * HD;
    const bf16* tV = sV + stage * BN * HD;

    // Partial S over this warp's dims, all BN keys.
    float s[C::kSTiles][4];
#pragma unroll
    for (int j = 0; j < C::kSTiles; ++j) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.f;
#pragma unroll
    for (int kk = 0; kk < C::kKSteps; ++kk) {
      const int chunk = warp * (C::kDimsPerWarp / 8) + kk * 2 + ((lane >> 3) & 1);
#pragma unroll
      for (int np = 0; np < C::kSTiles / 2; ++np) {
        uint32_t kb[4];
        ldmatrix_x4(kb, tK + swz<HD>(np * 16 + (lane & 7) + ((lane >> 4) << 3), chunk));
        mma_bf16_16816(s[2 * np], qf[kk], kb[0], kb[1]);
        mma_bf16_16816(s[2 * np + 1], qf[kk], kb[2], kb[3]);
      }
    }
    {
      float* dst = sS + warp * BM * C::kSStride;
#pragma unroll
      for (int j = 0; j < C::kSTiles; ++j) {
        const int col = j * 8 + (lane & 3) * 2;
        *reinterpret_cast<float2*>(dst + r_lo * C::kSStride + col) = make_float2(s[j][0], s[j][1]);
        *reinterpret_cast<float2*>(dst + (r_lo + 8) * C::kSStride + col) = make_float2(s[j][2], s[j][3]);
      }
    }
    __syncthreads();

    // Softmax of this warp's rows: lane = key (BN = 32), or two rows of 16 keys (BN = 16).
    const int k0 = tile * BN;
    const int key = k0 + sm_key;
#pragma unroll
    for (int i = 0; i < kSmIters; ++i) {
      // A padding row (position -1) masks every key, so its P stays zero; at BN = 32 the row is
      // the whole warp's and is skipped (at BN = 16 a pass holds two rows, so it runs through).
      if constexpr (kRowsPerPass == 1)
        if (!sm_live[i]) continue;
      const int row = sm_row[i];
      float x = 0.f;
#pragma unroll
      for (int w = 0; w < NW; ++w) x += sS[(w * BM + row) * C::kSStride + sm_key];
      x *= a.scale_log2;
      const bool causal_ok = key <= sm_pos[i] && (a.window == 0 || sm_pos[i] - key < a.window);
      const bool vision_ok = sm_blk[i] >= 0 && sKeyBlk[stage * BN + sm_key] == sm_blk[i] &&
                             (!a.mm_in_window || a.window == 0 || sm_pos[i] - key < a.window);
      if (!(key < cta.kv_len && (causal_ok || vision_ok))) x = -INFINITY;
      float mx = x;
#pragma unroll
      for (int off = BN / 2; off >= 1; off >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));
      const float m_new = fmaxf(m_run[i], mx);
      const float base = m_new == -INFINITY ? 0.f : m_new;  // nothing visible yet: stays at zero
      const float alpha = exp2f(m_run[i] - base);
      const float p = exp2f(x - base);
      m_run[i] = m_new;
      l_run[i] = l_run[i] * alpha + p;
      sP[row * C::kPStride + sm_key] = __float2bfloat16_rn(p);
      if (sm_key == 0) sAlpha[row] = alpha;
    }
    __syncthreads();

    // O += P·V for this warp's output columns.
    {
      const float al0 = sAlpha[r_lo], al1 = sAlpha[r_lo + 8];
#pragma unroll
      for (int j = 0; j < C::kOTiles; ++j) o[j][0] *= al0, o[j][1] *= al0, o[j][2] *= al1, o[j][3] *= al1;
    }
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk) {
      uint32_t pa[4];
      ldmatrix_x4(pa, sP + (lane & 15) * C::kPStride + kk * 16 + (lane >> 4) * 8);
#pragma unroll
      for (int dp = 0; dp < C::kOTiles / 2; ++dp) {
        uint32_t vb[4];
        ldmatrix_x4_trans(vb, tV + swz<HD>(kk * 16 + (lane & 7) + (((lane >> 3) & 1) << 3),
                                           warp * (C::kDimsPerWarp / 8) + dp * 2 + (lane >> 4)));
        mma_bf16_16816(o[2 * dp], pa, vb[0], vb[1]);
        mma_bf16_16816(o[2 * dp + 1], pa, vb[2], vb[3]);
      }
    }
  }
  cp_async_wait<0>();

  // Row sums: add the key lanes of each owned row; publish max and sum.
#pragma unroll
  for (int i = 0; i < kSmIters; ++i) {
    float l = l_run[i];
#pragma unroll
    for (int off = BN / 2; off >= 1; off >>= 1) l += __shfl_xor_sync(0xffffffffu, l, off);
    if (sm_key == 0) sM[sm_row[i]] = m_run[i], sL[sm_row[i]] = l;
  }
  __syncthreads();

#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int r = r_lo + 8 * h, pr = cta.row0 + r;
    if (pr >= cta.rows) continue;
    const float l = sL[r];
    const int t = cta.q0 + pr / a.group, head = cta.kvh * a.group + pr % a.group;
    const int col = warp * C::kDimsPerWarp + (lane & 3) * 2;
    if (a.num_splits == 1) {
      const float inv = l > 0.f ? 1.f / l : 0.f;
      bf16* dst = a.out + (int64_t(t) * a.num_q_heads + head) * HD + col;
#pragma unroll
      for (int j = 0; j < C::kOTiles; ++j)
        *reinterpret_cast<uint32_t*>(dst + j * 8) = pack_bf16x2(o[j][2 * h] * inv, o[j][2 * h + 1] * inv);
    } else {
      const int64_t prow = (int64_t(cta.split) * a.num_tokens + t) * a.num_q_heads + head;
      float* dst = a.part_o + prow * HD + col;
#pragma unroll
      for (int j = 0; j < C::kOTiles; ++j)
        *reinterpret_cast<float2*>(dst + j * 8) = make_float2(o[j][2 * h], o[j][2 * h + 1]);
      if (warp == 0 && (lane & 3) == 0) a.part_ml[2 * prow] = sM[r], a.part_ml[2 * prow + 1] = l;
    }
  }
  if (a.num_splits > 1 && a.split_counters)
    combine_if_last<HD, BM, NT>(a, cta.seq, cta.q_tile, cta.kvh, cta.row0, cta.rows, cta.q0,
                                reinterpret_cast<float*>(sK));
}

template <class C>
void enable_decode_smem() {
  allow_smem_on_current_device(reinterpret_cast<const void*>(attention_decode_kernel<C>), C::kSmemBytes);
}

template <class C>
void launch_decode_config(const TileArgs& a, const TileGrid& g, cudaStream_t stream) {
  enable_decode_smem<C>();
  const dim3 grid(g.q_tiles, g.kv_heads * a.num_splits, g.num_seqs);
  launch_pdl("attention_decode_kernel", attention_decode_kernel<C>, grid, C::kThreads, C::kSmemBytes, stream, a);
  GS_CUDA_LAUNCHED("attention_decode_kernel");
}

template <class C>
int decode_config_occupancy() {
  enable_decode_smem<C>();
  int blocks = 0;
  GS_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, attention_decode_kernel<C>, C::kThreads,
                                                              C::kSmemBytes));
  return blocks > 0 ? blocks : 1;
}

}  // namespace gs::cuda::attn
