// The hd256 serial wgmma kernel (attention_wgmma.cuh) as a persistent kernel, the default for
// hd256 prefill: one CTA per SM walks the launch's work items (query tile x KV head x split x
// sequence) from a queue, so most of a CTA's fixed ~4.6 us (the chain to its first K tile, the Q
// load, the output store, the next CTA's start) overlaps the previous item's work:
// - the producer warpgroup runs on into the next item's K/V as soon as stages free, claiming the
//   next item two tiles before the current one's last is loaded (one atomic per item; the first
//   item of a CTA is its blockIdx.x);
// - each consumer warpgroup frees its 64 Q rows with its last S of an item, and the producer
//   loads the next item's Q rows there by TMA while that warpgroup finishes softmax and P·V;
// - the output leaves through a staging buffer of its own (16 KB per warpgroup, two rounds of 128
//   columns), not through the Q rows, so the next Q does not wait for it.
// Items are taken in the order of wgmma_block_order (each head's query tiles longest first, the
// shortest eighth of every head held back to the end), the queue balancing what a static walk
// could not (causal items differ up to 64x in work); docs/kernel-policy.md, "Attention: persistent
// wgmma kernels", has its measurement against the serial kernel.
//
// Shared memory: Q 64 KB | K 2 x 32 KB | V 2 x 32 KB | O staging 2 x 16 KB | barriers | 2 item slots.
#pragma once
#include "kernels/cuda/attention_wgmma.cuh"

namespace gs::cuda::attn {

// What the producer tells the consumers about an item (one of two slots, handed over by mbarriers).
struct PersistentItem {
  int t;                  // queue index; -1: no more items
  int q0, rows, row0;     // the sequence's first query token, its packed rows, the item's first row
  int kvh, split;
  int kv_len, first_new_key;
  int key0, n_tiles;      // the split's key tiles
  int q_tma;              // Q by TMA (and O through the staging buffer): the tile is whole
  // The fields of its CtaPlace that the consumers' Q gather and direct epilogue read.
  __device__ CtaPlace place() const {
    CtaPlace c{};
    c.q0 = q0, c.rows = rows, c.row0 = row0, c.kvh = kvh, c.split = split;
    return c;
  }
};

struct WgPersistent : WgConfig<256> {
  static constexpr uint32_t kOffO = kOffX;                 // after V (hd256 has no S exchange)
  static constexpr uint32_t kOStageBytes = 64 * 128 * 2;   // per warpgroup: two 64-column slabs
  static constexpr uint32_t kOffPBar = kOffO + 2 * kOStageBytes;
  static constexpr int kNumBars = 16;
  static constexpr uint32_t kOffItems = kOffPBar + kNumBars * 8;
  static constexpr size_t kSmemBytesP = 1024 + kOffItems + 2 * sizeof(PersistentItem);
  // Registers after setmaxnreg (the launch gives 168 x 384). The producer carries an item's
  // state besides the serial kernel's: at the serial kernel's 72 its copies run one dependency
  // chain at a time and slow the main loop (docs/kernel-policy.md, "Attention: persistent wgmma
  // kernels"); the consumers need ~200.
  static constexpr int kProducerRegs = 88, kConsumerRegs = 208;
  static_assert(2 * 128 * kConsumerRegs + 128 * kProducerRegs <= 168 * 384, "over the launch's registers");
  static_assert(kStages == 2 && kBlockN == 64 && kBlockM == 128, "the serial hd256 layout");
  static_assert(kSmemBytesP <= 232448, "over the 227 KB a CTA may use");
};

// The CTA place of queue item t: items run through each sequence's grid cells in the order the
// non-persistent kernel's CTAs start (wgmma_block_order), sequence after sequence.
__device__ __forceinline__ CtaPlace persistent_item_place(const TileArgs& a, int t) {
  const int per_seq = a.item_q_tiles * a.item_heads;
  const int seq = t / per_seq;
  const GridPos p = grid_cell_in_order(t - seq * per_seq, a.item_q_tiles, a.item_heads);
  return cta_place_cell(a, 128, a.item_q_tiles - 1 - p.x, p.y, seq);
}

// OV: the launch has the vision overlay (as attention_wgmma_kernel).
template <bool OV>
__global__ void __launch_bounds__(WgPersistent::kThreads, 1)
    attention_wgmma_persistent_kernel(const TileArgs a, const __grid_constant__ CUtensorMap tma_q,
                                      const __grid_constant__ CUtensorMap tma_o) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using C = WgPersistent;
  constexpr int HD = 256, BM = 128, BN = 64, ST = 2;
  using bf16 = __nv_bfloat16;

  extern __shared__ __align__(1024) uint8_t smem_raw[];
  const AlignedSmem aligned = align_smem_1024(smem_raw);
  const uint32_t base = aligned.base;
  uint8_t* smem = aligned.ptr;
  const uint32_t sQ = base, sK = base + C::kOffK, sV = base + C::kOffV, sO = base + C::kOffO;
  const uint32_t bars = base + C::kOffPBar;
  auto full_k = [&](int s) { return bars + 8u * s; };
  auto full_v = [&](int s) { return bars + 8u * (2 + s); };
  auto empty_k = [&](int s) { return bars + 8u * (4 + s); };
  auto empty_v = [&](int s) { return bars + 8u * (6 + s); };
  auto q_full = [&](int w) { return bars + 8u * (8 + w); };      // warpgroup w's Q rows landed
  auto q_empty = [&](int w) { return bars + 8u * (10 + w); };    // ... read by its last S
  auto item_full = [&](int i) { return bars + 8u * (12 + i); };
  auto item_empty = [&](int i) { return bars + 8u * (14 + i); };
  PersistentItem* items = reinterpret_cast<PersistentItem*>(smem + C::kOffItems);

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int n_items = a.item_q_tiles * a.item_heads * a.item_seqs;
  if (tid == 0) {
    for (int s = 0; s < ST; ++s) {
      wg::mbar_init(full_k(s), 128), wg::mbar_init(full_v(s), 128);  // every producer thread
      wg::mbar_init(empty_k(s), 8), wg::mbar_init(empty_v(s), 8);    // one arrival per consumer warp
    }
    for (int w = 0; w < 2; ++w) wg::mbar_init(q_full(w), 1), wg::mbar_init(q_empty(w), 4);
    for (int i = 0; i < 2; ++i) wg::mbar_init(item_full(i), 1), wg::mbar_init(item_empty(i), 256);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();

  if (warp >= 8) {
    // ---- producer warpgroup: fetches items, loads Q by TMA, gathers K/V ----
    wg::setmaxnreg_dec<C::kProducerRegs>();
    constexpr int kRowsPerPass = 128 / C::kChunks;
    const int pt = tid - C::kConsumerThreads, c = pt % C::kChunks, rr = pt / C::kChunks;
    const uint32_t chunk_off = (c >> 3) * (BN * 128);
    int next = blockIdx.x;  // warp 8 lane 0's candidate for the next item
    auto claim = [&]() { return int(gridDim.x) + atomicAdd(a.work_queue, 1); };
    int gtile = 0;          // key tiles loaded so far (stage and phase across items)
    for (int u = 0;; ++u) {
      const int slot = u & 1;
      if (warp == 8) {
        // The next item that has rows: the queue hands out cells of shorter sequences too.
        if (u >= 2) wg::mbar_wait(item_empty(slot), ((u >> 1) - 1) & 1);
        int t = __shfl_sync(0xffffffffu, next, 0);
        CtaPlace cta{};
        for (;;) {
          if (t >= n_items) {
            t = -1;
            break;
          }
          cta = persistent_item_place(a, t);
          if (!cta.idle()) break;
          int n = 0;
          if (lane == 0) n = claim();
          t = __shfl_sync(0xffffffffu, n, 0);
        }
        PersistentItem it{};
        it.t = t;
        if (t >= 0) {
          // The rows' positions: computed where they end their sequences' contexts, else loaded.
          const int last = min(cta.row0 + BM, cta.rows) - 1;
          int pmin = INT_MAX, pmax = -1;
          if (a.rows_end_context) {
            pmin = cta.first_new_key + cta.row0 / a.group, pmax = cta.first_new_key + last / a.group;
          } else {
            for (int r = cta.row0 + lane; r <= last; r += 32) {
              const int p = a.positions[cta.q0 + r / a.group];
              pmin = min(pmin, p), pmax = max(pmax, p);
            }
            pmin = __reduce_min_sync(0xffffffffu, pmin), pmax = __reduce_max_sync(0xffffffffu, pmax);
          }
          const bool any_mm = OV && warp_any_image_row(a, cta.q0, cta.row0, last, lane);
          const KeyTiles kt = split_key_tiles(a, cta, pmin, pmax, any_mm, BN, a.key_align);
          it.q0 = cta.q0, it.rows = cta.rows, it.row0 = cta.row0, it.kvh = cta.kvh, it.split = cta.split;
          it.kv_len = cta.kv_len, it.first_new_key = cta.first_new_key, it.key0 = kt.key0, it.n_tiles = kt.count;
          it.q_tma = a.tma_q && cta.row0 + BM <= cta.rows;
          // An item without key tiles claims its successor now (the others: near their end).
          if (lane == 0 && kt.count == 0) next = claim();
        }
        // The item before has released both warpgroups' Q rows (its last S) before this one is
        // published. A warpgroup that gathers its rows (a cut tile) releases them as soon as its
        // last S is done, which needs no Q load of the producer; two releases ahead of this wait
        // would complete its phase twice, and the wait would be for the phase after (parity).
        if (u > 0) wg::mbar_wait(q_empty(0), (u - 1) & 1), wg::mbar_wait(q_empty(1), (u - 1) & 1);
        if (lane == 0) {
          items[slot] = it;
          wg::mbar_arrive(item_full(slot));  // release: the slot's contents before the consumers' acquire
        }
      }
      asm volatile("bar.sync 4, 128;\n" ::: "memory");  // the slot, to the other producer warps
      const PersistentItem it = items[slot];
      if (it.t < 0) break;
      const int* page_table = a.page_table + int64_t(it.t / (a.item_q_tiles * a.item_heads)) * a.max_pages;

      // Q of this item into warpgroup w's rows (the item before has read them: waited for above,
      // by warp 8 as a whole: a wait inside one lane's branch, while the other lanes went on to
      // the next tile's shuffles, hung the attention suite).
      auto load_q = [&]() {
        if (warp != 8 || lane != 0 || !it.q_tma) return;  // cut tiles: the consumers gather them
        for (int w = 0; w < 2; ++w) {
          wg::mbar_arrive_expect_tx(q_full(w), C::kQBytes / 2);
          const int t0 = it.q0 + (it.row0 + 64 * w) / a.group;
#pragma unroll
          for (int slab = 0; slab < HD / 64; ++slab)
            wg::tma_load_3d(sQ + slab * (BM * 128) + w * 64 * 128, &tma_q, slab * 64, it.kvh * a.group, t0, q_full(w));
        }
      };
      // K or V of the item's key tile (global tile gj). A warp copies rows rr, rr + 4, ...: lane
      // p of the warp looked up row rr + 4p (`mine`), so pass p takes its offset from lane p, an
      // index known at compile time.
      auto load = [&](int kv, int gj, int64_t mine) {
        const int s = gj % ST, use = gj / ST;
        if (use > 0) wg::mbar_wait(kv == 0 ? empty_k(s) : empty_v(s), (use - 1) & 1);
        const bf16* src_base = (kv == 0 ? a.k : a.v) + c * 8;
        const uint32_t dst_base = (kv == 0 ? sK : sV) + s * C::kTileBytes + chunk_off;
#pragma unroll
        for (int pass = 0; pass < BN / kRowsPerPass; ++pass) {
          const int r = pass * kRowsPerPass + rr;
          const int64_t o = __shfl_sync(0xffffffffu, mine, pass);
          const uint32_t dst = dst_base + r * 128 + (((c & 7) ^ (r & 7)) << 4);
          const bf16* src = o >= 0 ? src_base + o : src_base;
          asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(o >= 0 ? 16 : 0));
        }
        wg::mbar_arrive_cp_async(kv == 0 ? full_k(s) : full_v(s));
      };
      static_assert(BN / kRowsPerPass <= 32, "a lane per pass");
      // Key tile j: this lane's row's page (-1 offset: zero fill), then the tile's K and V.
      auto tile = [&](int j) {
        const int key = it.key0 + j * BN + (lane % (BN / kRowsPerPass)) * kRowsPerPass + rr;
        const int kc = min(key, it.kv_len - 1);  // past the end: never used
        const int page = page_table[a.page_shift >= 0 ? kc >> a.page_shift : kc / a.page_size];
        const int lp = a.page_shift >= 0 ? key >> a.page_shift : key / a.page_size;
        const int slot_in_page = key - lp * a.page_size;
        const int64_t mine = key < it.kv_len && page >= 0 ? int64_t(page) * a.page_stride +
                                                                int64_t(slot_in_page) * a.token_stride +
                                                                int64_t(it.kvh) * HD
                                                          : -1;
        load(0, gtile + j, mine);
        load(1, gtile + j, mine);
      };
      // The next item is claimed two tiles before this one's last is loaded, some 4 tiles before
      // the consumers finish it: time for the atomic, the item's place and its first K tile,
      // while an SM that finishes sooner can still take the items after it. (Claimed at an
      // item's start instead, the windowless causal shape lost 20%: the long items at the
      // queue's end waited a whole item for the SM that had claimed them.)
      const int claim_at = max(0, it.n_tiles - 2);
      if (it.n_tiles > 0) {
        if (warp == 8 && lane == 0 && claim_at == 0) next = claim();
        tile(0);
      }
      load_q();  // after the first tile: its stages free before the Q rows do
      // (The first tile is peeled so that the Q load's fields of the item are dead in the loop:
      // the producer's registers are what keeps its copies from running one at a time.)
      for (int j = 1; j < it.n_tiles; ++j) {
        if (warp == 8 && lane == 0 && j == claim_at) next = claim();
        tile(j);
      }
      gtile += it.n_tiles;
    }
    if (pt == 0) {
      // The last CTA out resets the queue for the next launch on this stream.
      __threadfence();
      if (atomicAdd(a.work_queue + 1, 1) == int(gridDim.x) - 1) a.work_queue[0] = 0, a.work_queue[1] = 0;
    }
    cp_async_wait<0>();
    return;
  }
  wg::setmaxnreg_inc<C::kConsumerRegs>();

  // ---- consumer warpgroups: 64 rows each, the serial kernel's tile step ----
  const int wgi = __shfl_sync(0xffffffffu, warp >> 2, 0);
  const int w4 = warp & 3, tq = tid & 127;
  const int wg_row0 = wgi * 64;
  const int r_lo = wg_row0 + w4 * 16 + (lane >> 2);  // this thread's rows r_lo and r_lo + 8 of the tile
  constexpr int NA = C::kAcc;
  const uint64_t q_desc = wg::desc_sw128(sQ + wg_row0 * 128, 16, 1024);
  const uint64_t k_desc = wg::desc_sw128(sK, 16, 1024);
  const uint64_t v_desc = wg::desc_sw128(sV, BN * 128, 1024);
  const uint32_t o_stage = sO + wgi * C::kOStageBytes;
  auto wg_bar = [&]() {
    if (wgi == 0) asm volatile("bar.sync 2, 128;\n" ::: "memory");
    else asm volatile("bar.sync 3, 128;\n" ::: "memory");
  };
  auto release = [&](uint32_t bar) {
    if (lane == 0) wg::mbar_arrive(bar);
  };
  float o[128];

  int gtile = 0, q_loads = 0;
  for (int u = 0;; ++u) {
    const PersistentItem it = wg::take_slot(items, u, item_full(u & 1), item_empty(u & 1));
    if (it.t < 0) break;

    // This thread's rows' positions (-1 past the sequence's end), and its warp's span for the mask.
    int qpos[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int pr = it.row0 + r_lo + 8 * h;
      qpos[h] = pr >= it.rows        ? -1
                : a.rows_end_context ? it.first_new_key + pr / a.group
                                     : a.positions[it.q0 + pr / a.group];
    }
    int wpmin = INT_MAX, wpmax = -1;
#pragma unroll
    for (int h = 0; h < 2; ++h)
      if (qpos[h] >= 0) wpmin = min(wpmin, qpos[h]), wpmax = max(wpmax, qpos[h]);
    wpmin = __reduce_min_sync(0xffffffffu, wpmin), wpmax = __reduce_max_sync(0xffffffffu, wpmax);
    TileRows rows{it.kv_len, a.window, wpmin, wpmax, {qpos[0], qpos[1]}};
    if constexpr (OV) set_overlay(rows, a, it.q0, it.rows, it.first_new_key, it.row0 + r_lo);

    if (it.q_tma) {
      wg::mbar_wait(q_full(wgi), q_loads & 1);
      ++q_loads;
    } else {
      // A tile cut by its sequence's end: this warpgroup gathers its rows (zero past the end).
      gather_q_rows<HD, BM>(a, it.place(), sQ, wg_row0, 64, tq, 128);
      wg_bar();
    }

#pragma unroll
    for (int i = 0; i < 128; ++i) o[i] = 0.f;
    float m_run[2] = {-INFINITY, -INFINITY}, l_run[2] = {0.f, 0.f};
    if (it.n_tiles == 0) release(q_empty(wgi));

    for (int j = 0; j < it.n_tiles; ++j) {
      const int gj = gtile + j, s = gj % ST, parity = (gj / ST) & 1, k0 = it.key0 + j * BN;
      float sc[NA];
      wg::mbar_wait(full_k(s), parity);
      wg::fence_proxy_async();
      wg::fence();
      wg_issue_s<C>(sc, q_desc, k_desc, s);
      wg::wait<0>();
      wg::pin(sc);
      release(empty_k(s));
      if (j == it.n_tiles - 1) release(q_empty(wgi));  // the next item's Q may land in these rows
      float alpha[2];
      softmax_tile<BN, OV>(sc, k0, rows, a.scale_log2, lane, m_run, l_run, alpha);
      uint32_t p[NA / 2];
      pack_p_tile<NA>(sc, p);
      rescale_o_tile(o, alpha);
      wg::mbar_wait(full_v(s), parity);
      wg::fence_proxy_async();
      wg::fence();
      wg_issue_pv<C>(o, p, v_desc, s);
      wg::wait<0>();
      wg::pin(o);
      release(empty_v(s));
    }
    gtile += it.n_tiles;

    // ---- epilogue ----
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      l_run[h] += __shfl_xor_sync(0xffffffffu, l_run[h], 1);
      l_run[h] += __shfl_xor_sync(0xffffffffu, l_run[h], 2);
    }
    if (it.q_tma && a.num_splits == 1) {
      // Two rounds of 128 columns through this warpgroup's 16 KB staging buffer (two swizzled
      // slabs of 64 rows), each sent as two TMA boxes. A round waits only for the previous
      // round's boxes to have read the buffer; the last round's store runs on under the next item.
      const int r = w4 * 16 + (lane >> 2);  // row within the warpgroup (and its + 8)
      const int t0 = it.q0 + (it.row0 + wg_row0) / a.group;
      const float inv[2] = {l_run[0] > 0.f ? 1.f / l_run[0] : 0.f, l_run[1] > 0.f ? 1.f / l_run[1] : 0.f};
#pragma unroll
      for (int round = 0; round < 2; ++round) {
        if (tq == 0) asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
        wg_bar();
        stage_o_rows<16>(o, inv, o_stage, r, lane, 16 * round);
        wg::fence_proxy_async();
        wg_bar();
        if (tq == 0) {
#pragma unroll
          for (int i = 0; i < 2; ++i)
            wg::tma_store_3d(&tma_o, o_stage + i * (64 * 128), (2 * round + i) * 64, it.kvh * a.group, t0);
          asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
        }
      }
      continue;
    }
    store_o_direct<HD>(a, o, m_run, l_run, it.place(), it.row0 + r_lo, 0, lane, true);
  }
  // The staging buffer must stay until the last boxes have read it.
  if (tq == 0) asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
#else
  __trap();
#endif
}

// CTAs of the persistent launch: one per SM, never more than there are items.
void launch_wgmma_persistent(const TileArgs& a_in, const TileGrid& g, cudaStream_t stream);

}  // namespace gs::cuda::attn
