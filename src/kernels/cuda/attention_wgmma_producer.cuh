// The producer warpgroup of attention_wgmma_kernel (attention_wgmma.cuh) and its K/V loads, which
// the persistent paired kernel (attention_wgmma_pair_persistent.cuh) shares: K then V of each key
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
#include "kernels/cuda/attention_wgmma_sync.cuh"

namespace gs::cuda::attn {

// The mbarriers at C::kOffBar: per stage s, K and V landed (full) and free again (empty); the Q
// tile landed (TMA).
template <class C>
struct WgBarriers {
  uint32_t bars;
  __device__ __forceinline__ uint32_t full_k(int s) const { return bars + 8u * s; }
  __device__ __forceinline__ uint32_t full_v(int s) const { return bars + 8u * (C::kStages + s); }
  __device__ __forceinline__ uint32_t empty_k(int s) const { return bars + 8u * (2 * C::kStages + s); }
  __device__ __forceinline__ uint32_t empty_v(int s) const { return bars + 8u * (3 * C::kStages + s); }
  __device__ __forceinline__ uint32_t q_full() const { return bars + 8u * (4 * C::kStages); }
};

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
// Where a CTA's keys live: its sequence's page table and length, its KV head.
struct KvSource {
  const int* page_table;
  int kv_len, kvh;
};

// A producer thread's part of the K/V loads, shared by attention_wgmma_kernel and the persistent
// paired kernel (attention_wgmma_pair_persistent.cuh): where a key tile's rows come from
// (lookup) and the copies of its K or V into the single stage ring (load), for global tile index
// gj (stage gj % ST, use gj / ST). Paired: rank is this CTA's in the pair.
template <class C>
struct KvTileLoader {
  static constexpr int HD = C::kHeadDim, BN = C::kBlockN, ST = C::kStages;
  // Thread pt copies 16-byte chunk column c of rows rr, rr + kRowsPerPass, ...: a warp always
  // works on one key row (512 contiguous bytes per warp-instruction); where each row comes from
  // is looked up once per tile (lookup, below).
  static constexpr int kRowsPerPass = 128 / C::kChunks;
  // Where a tile's keys come from: lane l of every producer warp looks up keys l, l + 32, ...
  // of the tile once (off: element offset in the pool, -1: zero fill; tok: pool token for TMA),
  // and the warps share them by shuffles, for K and for V.
  static constexpr int KPL = C::kKeysPerLane;
  struct TileSrc {
    int64_t off[KPL];
    int tok[KPL];
    bool tma;  // every key below kv_len and on a live page: the whole tile can come by TMA
  };

  const TileArgs& a;
  WgBarriers<C> bar;
  uint32_t sK, sV;
  const CUtensorMap *tma_k, *tma_v;
  uint32_t rank;
  int pt, lane, warp;

  __device__ __forceinline__ void lookup(const KvSource& src, int k0, TileSrc& t) const {
    int page[KPL];
#pragma unroll
    for (int h = 0; h < KPL; ++h) {
      // Keys past the end read the last page's entry (never used): no branch around the read.
      const int key = min(k0 + lane + 32 * h, src.kv_len - 1);
      page[h] = src.page_table[a.page_shift >= 0 ? key >> a.page_shift : key / a.page_size];
    }
    bool all_live = true;
#pragma unroll
    for (int h = 0; h < KPL; ++h) {
      const int key = k0 + lane + 32 * h;
      const int lp = a.page_shift >= 0 ? key >> a.page_shift : key / a.page_size;
      const int slot = key - lp * a.page_size;
      const bool live = key < src.kv_len && page[h] >= 0;
      t.off[h] = live ? int64_t(page[h]) * a.page_stride + int64_t(slot) * a.token_stride + int64_t(src.kvh) * HD
                      : -1;
      t.tok[h] = live ? page[h] * a.page_size + slot : 0;
      all_live = all_live && live;
    }
    t.tma = C::kTma && a.tma_box_rows > 0 && __all_sync(0xffffffffu, all_live);
  }

  // K (kv 0) or V (kv 1) of global tile gj, once its stage's previous use has been released.
  __device__ __forceinline__ void load(int kv, int gj, int kvh, bool paired, const TileSrc& t) const {
    using bf16 = __nv_bfloat16;
    const int s = gj % ST, use = gj / ST;
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
              wg::tma_load_3d_multicast(tile_base + slab * (BN * 128) + g * 128, map, slab * 64, kvh, token, full, 3);
            }
          } else if (pt == 0) {
#pragma unroll
            for (int slab = 0; slab < HD / 64; ++slab)
              wg::tma_load_3d(tile_base + slab * (BN * 128) + g * 128, map, slab * 64, kvh, token, full);
          }
        }
      } else {
        wg::mbar_arrive(full);
      }
      return;
    }
    const int c = pt % C::kChunks, rr = pt / C::kChunks;
    const bf16* src_base = (kv == 0 ? a.k : a.v) + c * 8;
    const uint32_t dst_base = (kv == 0 ? sK : sV) + s * C::kTileBytes + (c >> 3) * (BN * 128);
#pragma unroll 8
    for (int pass = 0; pass < BN / kRowsPerPass; ++pass) {
      const int r = pass * kRowsPerPass + rr;
      const int64_t o = __shfl_sync(0xffffffffu, pick(t.off, r >> 5), r & 31);
      const uint32_t dst = dst_base + r * 128 + (((c & 7) ^ (r & 7)) << 4);
      const bf16* src = o >= 0 ? src_base + o : src_base;
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(o >= 0 ? 16 : 0));
    }
    wg::mbar_arrive_cp_async(full);
  }

  // Paired: the partner's consumers arrive on this CTA's empty barriers (and read what this CTA
  // multicast). A CTA stays until the last of `tiles` uses of every stage has been released by both.
  __device__ __forceinline__ void wait_released(int tiles) const {
    for (int s = 0; s < ST; ++s) {
      const int uses = (tiles - s + ST - 1) / ST;
      if (uses > 0) wg::mbar_wait(bar.empty_k(s), (uses - 1) & 1), wg::mbar_wait(bar.empty_v(s), (uses - 1) & 1);
    }
  }
};

// The producer warpgroup of attention_wgmma_kernel: the CTA's n_tiles key tiles (keys key0 +
// it·BN ..); tid: the thread (producer threads are C::kConsumerThreads ..).
template <class C>
__device__ __forceinline__ void wgmma_produce_kv(const TileArgs& a, const CtaPlace& cta, const WgBarriers<C>& bar,
                                                 uint32_t sK, uint32_t sV, int key0, int n_tiles, bool paired,
                                                 uint32_t rank, const CUtensorMap* tma_k,
                                                 const CUtensorMap* tma_v, int tid) {
  // It needs few registers; give the rest to the consumers (whose O alone is 128 per thread).
  wg::setmaxnreg_dec<C::kProducerRegs>();
  const int pt = tid - C::kConsumerThreads;
  const KvTileLoader<C> ld{a, bar, sK, sV, tma_k, tma_v, rank, pt, tid & 31, tid >> 5};
  const KvSource src{cta.page_table, cta.kv_len, cta.kvh};
  // Loads in the consumers' order: K and V of tile j. The page table is read per tile, not ahead
  // of it: the producer is not what binds (docs/kernel-policy.md, "Attention: wgmma prefill").
  typename KvTileLoader<C>::TileSrc cur;
  for (int step = 0; step < n_tiles; ++step) {
    ld.lookup(src, key0 + step * C::kBlockN, cur);
    ld.load(0, step, cta.kvh, paired, cur);
    ld.load(1, step, cta.kvh, paired, cur);
  }
  if (paired) ld.wait_released(n_tiles);
  cp_async_wait<0>();
}
#endif

}  // namespace gs::cuda::attn
