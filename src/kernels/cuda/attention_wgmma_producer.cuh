// The producer warpgroup of attention_wgmma_kernel (attention_wgmma.cuh): K then V of each key
// tile into the stages, as soon as the consumers free them. Whole tiles of live keys come by TMA
// where the configuration has it (multicast to the partner CTA when paired); others are gathered
// by 16-byte cp.async through the page table, zero-filled past kv_len and on freed pages. Also
// the layout of the kernel's barriers, which the producer and the consumers share.
#pragma once
#include <cuda.h>  // CUtensorMap (a type only)
#include <cuda_bf16.h>

#include <cstdint>

#include "kernels/cuda/attention_cta.cuh"
#include "kernels/cuda/attention_params.cuh"
#include "kernels/cuda/attention_timeline.cuh"
#include "kernels/cuda/attention_wgmma_sync.cuh"

namespace gs::cuda::attn {

// The mbarriers at C::kOffBar: per stage s, K and V landed (full) and free again (empty); the Q
// tile landed (TMA); for the cluster split, per consumer warpgroup w, the partner's half of S
// landed in this CTA's X (x_full, st.async transactions) and the partner has read what this CTA
// sent it (x_empty).
template <class C>
struct WgBarriers {
  uint32_t bars;
  __device__ __forceinline__ uint32_t full_k(int s) const { return bars + 8u * s; }
  __device__ __forceinline__ uint32_t full_v(int s) const { return bars + 8u * (C::kStages + s); }
  __device__ __forceinline__ uint32_t empty_k(int s) const { return bars + 8u * (2 * C::kStages + s); }
  __device__ __forceinline__ uint32_t empty_v(int s) const { return bars + 8u * (3 * C::kStages + s); }
  __device__ __forceinline__ uint32_t q_full() const { return bars + 8u * (4 * C::kStages); }
  __device__ __forceinline__ uint32_t x_full(int w) const { return bars + 8u * (4 * C::kStages + 1 + w); }
  __device__ __forceinline__ uint32_t x_empty(int w) const { return bars + 8u * (4 * C::kStages + 3 + w); }
};

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
// Key tile it covers keys key0 + it·BN .. of the n_tiles the CTA visits; paired: this CTA's rank
// in the pair; col0: its first head-dim column (the cluster split's half); tid: the thread
// (producer threads are C::kConsumerThreads ..).
template <class C>
__device__ __forceinline__ void wgmma_produce_kv(const TileArgs& a, const CtaPlace& cta, const WgBarriers<C>& bar,
                                                 uint32_t sK, uint32_t sV, int key0, int n_tiles, bool paired,
                                                 uint32_t rank, int col0, const CUtensorMap* tma_k,
                                                 const CUtensorMap* tma_v, int tid) {
  constexpr int HD = C::kHeadDim, BN = C::kBlockN, ST = C::kStages;
  using bf16 = __nv_bfloat16;
  const int lane = tid & 31, warp = tid >> 5;
  // It needs few registers; give the rest to the consumers (whose O alone is 128 per thread).
  wg::setmaxnreg_dec<C::kProducerRegs>();
  // Thread pt copies 16-byte chunk column c of rows rr, rr + kRowsPerPass, ...: a warp always
  // works on one key row (512 contiguous bytes per warp-instruction); where each row comes from
  // is looked up once per tile (lookup, below).
  constexpr int kRowsPerPass = 128 / C::kChunks;
  const int pt = tid - C::kConsumerThreads, c = pt % C::kChunks, rr = pt / C::kChunks;
  const uint32_t chunk_off = (c >> 3) * (BN * 128);
  // Where a tile's keys come from: lane l of every producer warp looks up keys l, l + 32, ...
  // of the tile once (off: element offset in the pool, -1: zero fill; tok: pool token for TMA),
  // and the warps share them by shuffles, for K and for V.
  constexpr int KPL = C::kKeysPerLane;
  struct TileSrc {
    int64_t off[KPL];
    int tok[KPL];
    bool tma;  // every key below kv_len and on a live page: the whole tile can come by TMA
  };
  auto lookup = [&](int j, TileSrc& t) {
    const int k0 = key0 + j * BN;
    int page[KPL];
#pragma unroll
    for (int h = 0; h < KPL; ++h) {
      // Keys past the end read the last page's entry (never used): no branch around the read.
      const int key = min(k0 + lane + 32 * h, cta.kv_len - 1);
      page[h] = cta.page_table[a.page_shift >= 0 ? key >> a.page_shift : key / a.page_size];
    }
    bool all_live = true;
#pragma unroll
    for (int h = 0; h < KPL; ++h) {
      const int key = k0 + lane + 32 * h;
      const int lp = a.page_shift >= 0 ? key >> a.page_shift : key / a.page_size;
      const int slot = key - lp * a.page_size;
      const bool live = key < cta.kv_len && page[h] >= 0;
      t.off[h] = live ? int64_t(page[h]) * a.page_stride + int64_t(slot) * a.token_stride + int64_t(cta.kvh) * HD
                      : -1;
      t.tok[h] = live ? page[h] * a.page_size + slot : 0;
      all_live = all_live && live;
    }
    t.tma = C::kTma && a.tma_box_rows > 0 && __all_sync(0xffffffffu, all_live);
  };
  auto load = [&](int kv, int j, const TileSrc& t) {
    const int s = j % ST, use = j / ST;
    if (use > 0) wg::mbar_wait(kv == 0 ? bar.empty_k(s) : bar.empty_v(s), (use - 1) & 1);
    const uint32_t full = kv == 0 ? bar.full_k(s) : bar.full_v(s);
    if (t.tma) {
      if (warp == 8) {
        // Expect the bytes before issuing the copies; the phase also waits for the other
        // 127 producer threads' plain arrivals.
        // Paired: the tile's bytes come half from this CTA's copies, half from the partner's.
        if (pt == 0) wg::mbar_arrive_expect_tx(full, C::kTileBytes);
        else wg::mbar_arrive(full);
        const CUtensorMap* map = kv == 0 ? tma_k : tma_v;
        const uint32_t tile_base = (kv == 0 ? sK : sV) + s * C::kTileBytes;
        for (int g = 0; g < BN; g += a.tma_box_rows) {  // boxes never straddle a page
          const int token = __shfl_sync(0xffffffffu, pick(t.tok, g >> 5), g & 31);
          if (pt == 0 && paired) {
            constexpr int kHalf = HD / 128;  // slabs per CTA
#pragma unroll
            for (int i = 0; i < kHalf; ++i) {
              const int slab = int(rank) * kHalf + i;
              wg::tma_load_3d_multicast(tile_base + slab * (BN * 128) + g * 128, map, slab * 64, cta.kvh, token,
                                        full, 3);
            }
          } else if (pt == 0) {
#pragma unroll
            for (int slab = 0; slab < HD / 64; ++slab)
              wg::tma_load_3d(tile_base + slab * (BN * 128) + g * 128, map, slab * 64, cta.kvh, token, full);
          }
        }
      } else {
        wg::mbar_arrive(full);
      }
      return;
    }
    const bf16* src_base = (kv == 0 ? a.k : a.v) + col0 + c * 8;
    const uint32_t dst_base = (kv == 0 ? sK : sV) + s * C::kTileBytes + chunk_off;
#pragma unroll 8
    for (int pass = 0; pass < BN / kRowsPerPass; ++pass) {
      const int r = pass * kRowsPerPass + rr;
      const int64_t o = __shfl_sync(0xffffffffu, pick(t.off, r >> 5), r & 31);
      const uint32_t dst = dst_base + r * 128 + (((c & 7) ^ (r & 7)) << 4);
      const bf16* src = o >= 0 ? src_base + o : src_base;
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(o >= 0 ? 16 : 0));
    }
    wg::mbar_arrive_cp_async(full);
  };
  // Order of the loads: the consumers' order. Serial: K and V of tile j. Pipelined: K of tile j
  // with V of tile j-1 (what one consumer step reads), so K of tile j+1 is requested as soon
  // as S of tile j has freed its stage, not behind V of tile j, whose stage frees only when the
  // P·V of tile j-1 completes at the end of the step (hd512 has a single stage of each).
  // Reading the page table of tile j+1 while waiting for tile j's stages (lookup ahead) was
  // measured and lost 2% at hd256 (H100, 2026-11-25): the producer is not what binds.
  TileSrc cur, prev;
  for (int step = 0; step < n_tiles + (C::kPipelined ? 1 : 0); ++step) {
    if (step < n_tiles) {
      lookup(step, cur);
      GS_TL_MARK(step == 0 && pt == 0, kFirstLookup);
      load(0, step, cur);
    }
    if constexpr (C::kPipelined) {
      if (step > 0) load(1, step - 1, prev);
      prev = cur;
    } else {
      load(1, step, cur);
    }
  }
  if (paired) {
    // The partner's consumers arrive on this CTA's empty barriers (and read what this CTA
    // multicast): stay until the last use of every stage has been released by both.
    for (int s = 0; s < ST; ++s) {
      const int uses = (n_tiles - s + ST - 1) / ST;
      if (uses > 0) wg::mbar_wait(bar.empty_k(s), (uses - 1) & 1), wg::mbar_wait(bar.empty_v(s), (uses - 1) & 1);
    }
  }
  cp_async_wait<0>();
}
#endif

}  // namespace gs::cuda::attn
