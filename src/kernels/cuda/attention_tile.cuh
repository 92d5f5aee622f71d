// One CTA of paged attention: a tile of packed query rows against a range of key tiles of one KV
// head, FlashAttention-2 style (online softmax in f32, tensor-core products, K/V tiles gathered
// through the page table with cp.async, STAGES deep).
//
// Rows. The query heads that share a KV head are packed into the rows of one tile: packed row
// pr = i·group + g is query token i of the sequence, query head kvh·group + g. K and V are read
// once per group instead of once per query head, and a decode step (q_len = 1) still fills
// `group` rows of the tensor-core tile.
//
// Warps. WM × WN warps; warp (wm, wn) owns query rows [16·wm, 16·wm + 16). Head dims 256 and 512
// are too wide for one warp to hold a 16 × d f32 O accumulator (512 columns = 256 registers per
// thread), so the work is split two ways that need the same rows but different columns:
//   S = Q·Kᵀ: warp wn computes the scores of key columns [wn·BN/WN, (wn+1)·BN/WN) over the full d;
//   O += P·V: warp wn accumulates output columns [wn·d/WN, (wn+1)·d/WN) over all BN keys.
// The two meet in shared memory: the row maxima are exchanged (every warp then applies the same
// running max, so the partial row sums each warp keeps add up exactly at the end), and P is
// written as bf16 and read back as the A operand of P·V. Per warp this keeps O at 16 × d/WN
// (64 or 128 registers per thread) and S at 16 × BN/WN. (One warp per row, WN = 1, measured
// slower: docs/kernel-policy.md, "Attention: prefill tile kernels".)
//
// Key range. Only key tiles that can hold a visible key are visited: causal stops after the
// largest query position of the tile, a sliding window starts at (smallest position − W + 1), so
// freed sliding pages below the window are never touched. The vision overlay can add keys of the
// current step that lie beyond those bounds, so tiles with vision rows also cover the step's own
// keys. Tiles that are entirely visible to every row skip the per-element mask.
//
// Splits. With num_splits > 1 (few CTAs: decode, verify, short prefills), split s of a CTA takes
// the s-th equal share of its key tiles and writes unnormalised O with its running max and sum
// to the workspace; the last split CTA of its (sequence, row tile, KV head) to finish merges the
// shares when the launch has split counters (attention_combine.cuh), else the separate combine
// kernel does.
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

template <int HD, int WM, int WN, int BN, int STAGES>
struct TileConfig {
  static constexpr int kHeadDim = HD;
  static constexpr int kBlockM = 16 * WM;          // packed query rows per CTA
  static constexpr int kBlockN = BN;               // keys per tile
  static constexpr int kStages = STAGES;
  static constexpr int kWarpsN = WN;
  static constexpr int kThreads = 32 * WM * WN;
  static constexpr int kChunks = HD / 8;           // 16-byte chunks in one head-dim row
  static constexpr int kKeysPerWarp = BN / WN;     // S columns of one warp
  static constexpr int kSTiles = kKeysPerWarp / 8;
  static constexpr int kDimsPerWarp = HD / WN;     // O columns of one warp
  static constexpr int kOTiles = kDimsPerWarp / 8;
  static constexpr int kPStride = BN + 8;          // P rows padded by 16 bytes: conflict-free ldmatrix
  static constexpr size_t kSmemBytes =
      size_t(kBlockM) * HD * 2                     // Q
      + size_t(2) * STAGES * BN * HD * 2           // K, V stages
      + size_t(kBlockM) * kPStride * 2             // P
      + size_t(2) * WN * kBlockM * 4               // row max / row sum exchange
      + size_t(2) * kBlockM * 4                    // row positions, row vision blocks
      + size_t(STAGES) * BN * 4;                   // key vision blocks per stage
  static_assert(WN >= 2, "the warps of a row share maxima and P through shared memory");
  static_assert(kKeysPerWarp >= 8 && kKeysPerWarp % 8 == 0, "each warp needs whole n8 tiles of S");
  static_assert(kSTiles == 1 || kSTiles % 2 == 0, "S tiles are loaded in pairs");
  static_assert(kOTiles % 2 == 0 && BN % 16 == 0, "P·V walks k16 steps and n8 pairs");
  static_assert(kThreads % kChunks == 0 && (BN * kChunks) % kThreads == 0, "uniform chunk ownership");
  static_assert(STAGES >= 2, "double buffering at least");
  static_assert(size_t(STAGES) * BN * HD * 2 >= size_t(kBlockM) * (2 * 32 + 1) * 4, "K stages hold the combine weights");
};

template <class C>
__global__ void __launch_bounds__(C::kThreads, 1) attention_tile_kernel(const TileArgs a) {
  constexpr int HD = C::kHeadDim, BM = C::kBlockM, BN = C::kBlockN, ST = C::kStages;
  constexpr int WN = C::kWarpsN;
  constexpr int NT = C::kThreads;
  using bf16 = __nv_bfloat16;

  extern __shared__ __align__(128) uint8_t smem[];
  bf16* sQ = reinterpret_cast<bf16*>(smem);
  bf16* sK = sQ + BM * HD;
  bf16* sV = sK + ST * BN * HD;
  bf16* sP = sV + ST * BN * HD;
  float* sMax = reinterpret_cast<float*>(sP + BM * C::kPStride);
  float* sSum = sMax + WN * BM;
  int* sRowPos = reinterpret_cast<int*>(sSum + WN * BM);
  int* sRowBlk = sRowPos + BM;
  int* sKeyBlk = sRowBlk + BM;

  // Before the PDL wait (attention_cta.cuh): the placement, the rows' positions and the first
  // stages of K/V tiles holding only keys cached by earlier steps.
  const CtaPlace cta = cta_place(a, BM);
  if (cta.idle()) {
    pdl_enter();
    return;
  }

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wm = warp / WN, wn = warp % WN;

  load_row_info(a, cta, BM, sRowPos, sRowBlk, tid, NT);
  __syncthreads();

  const SplitStart start = start_split<HD, BN, NT, ST - 1>(a, cta, BM, sRowPos, sRowBlk, sK, sV, sKeyBlk, tid);
  const int pmin = start.span.pmin, pmax = start.span.pmax;
  const bool any_mm = start.span.any_mm;
  const int t_begin = start.tiles.begin, n_tiles = start.tiles.count;
  auto load_kv = [&](int tile, int stage) {
    load_kv_tile<HD, BN, NT>(a, cta, any_mm, tile, sK + stage * BN * HD, sV + stage * BN * HD, sKeyBlk + stage * BN,
                             tid);
  };

  pdl_enter();  // Q and this step's keys are the previous kernel's (qkv_prepare) output
  for (int i = tid; i < BM * C::kChunks; i += NT) {
    const int r = i / C::kChunks, c = i % C::kChunks;
    bool ok;
    const bf16* src = q_chunk_src<HD>(a, cta, r, c, ok);
    cp_async16(sQ + swz<HD>(r, c), src, ok);
  }

#pragma unroll
  for (int s = 0; s < ST - 1; ++s) {
    if (s < n_tiles && !((start.early >> s) & 1u)) load_kv(t_begin + s, s);
    // Always commit: group i holds tile i (group 0 also holds Q and the tiles loaded early).
    cp_async_commit();
  }

  float o[C::kOTiles][4];
#pragma unroll
  for (int j = 0; j < C::kOTiles; ++j) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.f;
  float m_run[2] = {-INFINITY, -INFINITY}, l_run[2] = {0.f, 0.f};
  const int r_lo = wm * 16 + (lane >> 2);
  const int row_of[2] = {r_lo, r_lo + 8};
  const int qpos[2] = {sRowPos[r_lo], sRowPos[r_lo + 8]};
  const int qblk[2] = {sRowBlk[r_lo], sRowBlk[r_lo + 8]};

  for (int it = 0; it < n_tiles; ++it) {
    const int tile = t_begin + it, stage = it % ST;
    __syncthreads();  // the stage refilled below was last read in iteration it - 1
    if (it + ST - 1 < n_tiles) load_kv(tile + ST - 1, (it + ST - 1) % ST);
    cp_async_commit();
    cp_async_wait<ST - 1>();
    __syncthreads();
    const bf16* tK = sK + stage * BN * HD;
    const bf16* tV = sV + stage * BN * HD;

    // S = Q·Kᵀ for rows of wm, keys of wn.
    float s[C::kSTiles][4];
#pragma unroll
    for (int j = 0; j < C::kSTiles; ++j) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.f;
#pragma unroll
    for (int kk = 0; kk < HD / 16; ++kk) {
      uint32_t qa[4];
      ldmatrix_x4(qa, sQ + swz<HD>(wm * 16 + (lane & 15), kk * 2 + (lane >> 4)));
      if constexpr (C::kSTiles == 1) {
        uint32_t kb[2];
        ldmatrix_x2(kb, tK + swz<HD>(wn * C::kKeysPerWarp + (lane & 7), kk * 2 + ((lane >> 3) & 1)));
        mma_bf16_16816(s[0], qa, kb[0], kb[1]);
      } else {
#pragma unroll
        for (int np = 0; np < C::kSTiles / 2; ++np) {
          uint32_t kb[4];
          ldmatrix_x4(kb, tK + swz<HD>(wn * C::kKeysPerWarp + np * 16 + (lane & 7) + ((lane >> 4) << 3),
                                       kk * 2 + ((lane >> 3) & 1)));
          mma_bf16_16816(s[2 * np], qa, kb[0], kb[1]);
          mma_bf16_16816(s[2 * np + 1], qa, kb[2], kb[3]);
        }
      }
    }

    // Scale (log2 domain), mask, row maxima.
    const int k0 = tile * BN;
    const bool all_visible =
        k0 + BN <= cta.kv_len && k0 + BN - 1 <= pmin && (a.window == 0 || pmax - k0 < a.window);
    float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int j = 0; j < C::kSTiles; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int h = e >> 1;
        float x = s[j][e] * a.scale_log2;
        if (!all_visible) {
          const int kl = wn * C::kKeysPerWarp + j * 8 + (lane & 3) * 2 + (e & 1);
          const int key = k0 + kl;
          const bool causal_ok = key <= qpos[h] && (a.window == 0 || qpos[h] - key < a.window);
          const bool vision_ok = qblk[h] >= 0 && sKeyBlk[stage * BN + kl] == qblk[h] &&
                                 (!a.mm_in_window || a.window == 0 || qpos[h] - key < a.window);
          if (!(key < cta.kv_len && (causal_ok || vision_ok))) x = -INFINITY;
        }
        s[j][e] = x;
        mx[h] = fmaxf(mx[h], x);
      }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 1));
      mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 2));
    }
    if ((lane & 3) == 0) sMax[wn * BM + row_of[0]] = mx[0], sMax[wn * BM + row_of[1]] = mx[1];
    __syncthreads();

    // Online softmax: every warp of a row reads the same maxima, so all apply the same rescale.
    float base[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float m_new = fmaxf(m_run[h], mx[h]);
#pragma unroll
      for (int w = 0; w < WN; ++w) m_new = fmaxf(m_new, sMax[w * BM + row_of[h]]);
      base[h] = m_new == -INFINITY ? 0.f : m_new;  // a row with nothing visible yet stays at zero
      const float alpha = exp2f(m_run[h] - base[h]);
      m_run[h] = m_new;
      l_run[h] *= alpha;
#pragma unroll
      for (int j = 0; j < C::kOTiles; ++j) o[j][2 * h] *= alpha, o[j][2 * h + 1] *= alpha;
    }
#pragma unroll
    for (int j = 0; j < C::kSTiles; ++j) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        s[j][e] = exp2f(s[j][e] - base[e >> 1]);
        l_run[e >> 1] += s[j][e];
      }
      const int col = wn * C::kKeysPerWarp + j * 8 + (lane & 3) * 2;
      *reinterpret_cast<uint32_t*>(sP + row_of[0] * C::kPStride + col) = pack_bf16x2(s[j][0], s[j][1]);
      *reinterpret_cast<uint32_t*>(sP + row_of[1] * C::kPStride + col) = pack_bf16x2(s[j][2], s[j][3]);
    }
    __syncthreads();

    // O += P·V for rows of wm, output columns of wn.
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk) {
      uint32_t pa[4];
      ldmatrix_x4(pa, sP + (wm * 16 + (lane & 15)) * C::kPStride + kk * 16 + (lane >> 4) * 8);
#pragma unroll
      for (int dp = 0; dp < C::kOTiles / 2; ++dp) {
        uint32_t vb[4];
        ldmatrix_x4_trans(vb, tV + swz<HD>(kk * 16 + (lane & 7) + (((lane >> 3) & 1) << 3),
                                           wn * (C::kDimsPerWarp / 8) + dp * 2 + (lane >> 4)));
        mma_bf16_16816(o[2 * dp], pa, vb[0], vb[1]);
        mma_bf16_16816(o[2 * dp + 1], pa, vb[2], vb[3]);
      }
    }
  }
  cp_async_wait<0>();

  // Each warp summed only its own key columns: add the quad lanes, then the WN warps of a row.
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    l_run[h] += __shfl_xor_sync(0xffffffffu, l_run[h], 1);
    l_run[h] += __shfl_xor_sync(0xffffffffu, l_run[h], 2);
  }
  if ((lane & 3) == 0) sSum[wn * BM + row_of[0]] = l_run[0], sSum[wn * BM + row_of[1]] = l_run[1];
  __syncthreads();

#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int pr = cta.row0 + row_of[h];
    if (pr >= cta.rows) continue;
    float l = 0.f;
#pragma unroll
    for (int w = 0; w < WN; ++w) l += sSum[w * BM + row_of[h]];
    const int t = cta.q0 + pr / a.group, head = cta.kvh * a.group + pr % a.group;
    const int col = wn * C::kDimsPerWarp + (lane & 3) * 2;
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
      if (wn == 0 && (lane & 3) == 0) a.part_ml[2 * prow] = m_run[h], a.part_ml[2 * prow + 1] = l;
    }
  }
  if (a.num_splits > 1 && a.split_counters)
    combine_if_last<HD, BM, NT>(a, cta.seq, cta.q_tile, cta.kvh, cta.row0, cta.rows, cta.q0,
                                reinterpret_cast<float*>(sK));
}

// Opts the kernel of C into its shared-memory size (above the 48 KB default), once per device.
template <class C>
void enable_tile_smem() {
  allow_smem_on_current_device(reinterpret_cast<const void*>(attention_tile_kernel<C>), C::kSmemBytes);
}

template <class C>
void launch_tile_config(const TileArgs& a, const TileGrid& g, cudaStream_t stream) {
  enable_tile_smem<C>();
  const dim3 grid(g.q_tiles, g.kv_heads * a.num_splits, g.num_seqs);
  launch_pdl("attention_tile_kernel", attention_tile_kernel<C>, grid, C::kThreads, C::kSmemBytes, stream, a);
  GS_CUDA_LAUNCHED("attention_tile_kernel");
}

template <class C>
int tile_config_occupancy() {
  enable_tile_smem<C>();
  int blocks = 0;
  GS_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, attention_tile_kernel<C>, C::kThreads,
                                                              C::kSmemBytes));
  return blocks > 0 ? blocks : 1;
}

}  // namespace gs::cuda::attn
