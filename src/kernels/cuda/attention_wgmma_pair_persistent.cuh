// The hd512 prefill default, the paired serial TMA kernel (attention_wgmma.cuh,
// Hd512WgmmaSerialTmaPair), as a persistent kernel: one cluster of two CTAs per pair of SMs walks
// the launch's pair units (two adjacent query tiles of one KV head and sequence) from a queue.
// A CTA of the plain kernel spends several microseconds outside its main loop (the chain to its
// first K tile, the partner's start, storing O, the next CTA's start; docs/kernel-policy.md,
// "Attention: persistent wgmma kernels"). Here most of it overlaps the previous unit's last tiles:
// - the producer warpgroups run on into the next unit as soon as stages free: its first K tile
//   and each warpgroup's Q half (freed by that warpgroup's last S) load while the consumers finish
//   the unit before;
// - O leaves through an 8 KB staging slab per warpgroup in the upper half of the S exchange
//   buffer, which the row-split softmax leaves unused, in four rounds of 64 columns, so the next
//   Q does not wait for the store.
// Both CTAs of a cluster take part in every tile of a unit, K/V multicast as in the plain kernel,
// so their barrier phases stay in step; a CTA whose query tile is past its sequence's end (an odd
// tile count) waits for the tiles and releases them without computing. Rank 0 claims units (one
// atomic each, two tiles before its current unit's last is loaded, skipping units without rows)
// and hands each to rank 1 through its shared memory (st.async completing on an mbarrier).
//
// Shared memory: the plain kernel's (Q 64 KB | K 64 KB | V 64 KB | X 32 KB), then the barriers,
// two claim slots and two item slots.
#pragma once
#include "kernels/cuda/attention_wgmma.cuh"

namespace gs::cuda::attn {

// What a CTA's producer tells its consumers about a unit (one of two slots, handed over by mbarriers).
struct PairItem {
  int t;                 // queue index of the unit; -1: no more units
  int seq, q0, rows;     // the sequence, its first query token, its packed rows
  int row0, kvh, split;  // this CTA's query tile (first packed row), KV head, key split
  int kv_len, first_new_key;
  int key0, n_tiles;     // the unit's key tiles: the union of both query tiles' ranges
  int active;            // this CTA's tile has rows (else only its partner's does)
  int q_tma;             // Q by TMA and O through the staging slabs: the tile is whole
  __device__ CtaPlace place() const {
    CtaPlace c{};
    c.seq = seq, c.q0 = q0, c.rows = rows, c.row0 = row0, c.kvh = kvh, c.split = split;
    return c;
  }
};

struct WgPairPersistent : WgConfig<512, true> {
  // O staging: the upper half of X (the row-split softmax uses the lower 16 KB), one 64 x 64
  // slab per warpgroup.
  static constexpr uint32_t kOffO = kOffX + kXBytes / 2;
  static constexpr uint32_t kOStageBytes = 64 * 128;
  // Barriers: the plain kernel's (WgBarriers: full / empty of K and V, then its unused q_full),
  // then kExtraBars of this kernel's (see the kernel).
  static constexpr int kExtraBars = 12;
  static constexpr uint32_t kOffPBar = kOffX + kXBytes;
  static constexpr uint32_t kOffClaims = (kOffPBar + (5 + kExtraBars) * 8 + 15) & ~15u;  // 2 x 16 bytes (st.async)
  static constexpr uint32_t kOffItems = kOffClaims + 32;
  static constexpr size_t kSmemBytesP = 1024 + kOffItems + 2 * sizeof(PairItem);
  static_assert(kStages == 1 && kBlockN == 64 && kBlockM == 64 && kRowSplitSoftmax && kPair,
                "the paired serial hd512 layout");
  static_assert(2 * kOStageBytes <= kXBytes / 2, "staging inside X's free half");
  static_assert(kOffClaims % 16 == 0, "st.async needs 16-byte aligned slots");
  static_assert(kSmemBytesP <= 232448, "over the 227 KB a CTA may use");
};

// Unit t of the launch (units in the order of wgmma_block_order, sequence after sequence): its
// sequence, and its place in the sequence's grid of pair columns (x: 0 = the pair with the most
// keys) x heads.
struct PairUnit {
  int seq;
  GridPos cell;
};
__device__ __forceinline__ PairUnit pair_unit(const TileArgs& a, int t) {
  const int per_seq = a.item_q_tiles * a.item_heads;
  const int seq = t / per_seq;
  return {seq, grid_cell_in_order(t - seq * per_seq, a.item_q_tiles, a.item_heads)};
}
// Query tile of rank `rank` in a unit: rank 0 the later tile of the pair (as the plain kernel's
// cluster, whose CTA x is 2·cell.x + rank in a grid run from the last tile down).
__device__ __forceinline__ int pair_q_tile(const TileArgs& a, const PairUnit& u, int rank) {
  return 2 * a.item_q_tiles - 1 - (2 * u.cell.x + rank);
}

// OV: the launch has the vision overlay (as attention_wgmma_kernel).
template <bool OV>
__global__ void __launch_bounds__(WgPairPersistent::kThreads, 1)
    attention_wgmma_pair_persistent_kernel(const TileArgs a, const __grid_constant__ CUtensorMap tma_k,
                                           const __grid_constant__ CUtensorMap tma_v,
                                           const __grid_constant__ CUtensorMap tma_q,
                                           const __grid_constant__ CUtensorMap tma_o) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using C = WgPairPersistent;
  constexpr int HD = 512, BM = 64, BN = 64, NA = C::kAcc;

  extern __shared__ __align__(1024) uint8_t smem_raw[];
  const AlignedSmem aligned = align_smem_1024(smem_raw);
  const uint32_t base = aligned.base;
  uint8_t* smem = aligned.ptr;
  const uint32_t sQ = base, sK = base + C::kOffK, sV = base + C::kOffV;
  float* sX = reinterpret_cast<float*>(smem + C::kOffX);
  const WgBarriers<C> bar{base + C::kOffPBar};
  const uint32_t xbars = base + C::kOffPBar + 5 * 8;
  auto q_full = [&](int w) { return xbars + 8u * w; };          // warpgroup w's Q half landed
  auto q_empty = [&](int w) { return xbars + 8u * (2 + w); };   // ... read by its last S of a unit
  auto item_full = [&](int i) { return xbars + 8u * (4 + i); };
  auto item_empty = [&](int i) { return xbars + 8u * (6 + i); };
  auto claim_full = [&](int i) { return xbars + 8u * (8 + i); };   // rank 1: rank 0's claim landed
  auto claim_empty = [&](int i) { return xbars + 8u * (10 + i); }; // rank 0: rank 1 has read it
  const uint32_t sClaims = base + C::kOffClaims;
  PairItem* items = reinterpret_cast<PairItem*>(smem + C::kOffItems);

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  uint32_t rank;
  asm("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(rank));
  const int n_items = a.item_q_tiles * a.item_heads * a.item_seqs;
  if (tid == 0) {
    wg::mbar_init(bar.full_k(0), 128), wg::mbar_init(bar.full_v(0), 128);  // every producer thread
    wg::mbar_init(bar.empty_k(0), 16), wg::mbar_init(bar.empty_v(0), 16);  // each consumer warp of both CTAs
    for (int i = 0; i < 2; ++i) {
      wg::mbar_init(q_full(i), 1), wg::mbar_init(q_empty(i), 4);
      wg::mbar_init(item_full(i), 1), wg::mbar_init(item_empty(i), 256);
      wg::mbar_init(claim_full(i), 1), wg::mbar_init(claim_empty(i), 1);
      if (rank == 1) wg::mbar_arrive_expect_tx(claim_full(i), 16);  // armed for the first claim
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  wg::cluster_sync();  // both CTAs' barriers initialised before either touches the other's

  if (warp >= 8) {
    // ---- producer warpgroup: units, Q by TMA, K/V multicast with the partner ----
    wg::setmaxnreg_dec<C::kProducerRegs>();
    const int pt = tid - C::kConsumerThreads;
    const KvTileLoader<C> ld{a, bar, sK, sV, &tma_k, &tma_v, rank, pt, lane, warp};
    int next = int(blockIdx.x >> 1);  // rank 0, warp 8: the next unit to take (lane 0's claims)
    auto claim = [&]() { return int(gridDim.x >> 1) + atomicAdd(a.work_queue, 1); };
    int gtile = 0;  // key tiles loaded so far: the stage's use count across units
    int u = 0;
    for (;; ++u) {
      const int slot = u & 1;
      if (warp == 8) {
        int t;
        if (rank == 0) {
          // The next unit with rows (the queue hands out cells of shorter sequences too), then
          // the same to the partner.
          t = __shfl_sync(0xffffffffu, next, 0);
          for (;;) {
            if (t >= n_items) {
              t = -1;
              break;
            }
            const PairUnit pu = pair_unit(a, t);
            const int rows = (a.q_start[pu.seq + 1] - a.q_start[pu.seq]) * a.group;
            if (pair_q_tile(a, pu, 1) * BM < rows) break;  // the earlier tile has rows
            int n = 0;
            if (lane == 0) n = claim();
            t = __shfl_sync(0xffffffffu, n, 0);
          }
          if (u >= 2) wg::mbar_wait(claim_empty(slot), ((u >> 1) - 1) & 1);
          if (lane == 0)
            wg::st_async_v4(wg::map_to_cta(sClaims + 16 * slot, 1), __int_as_float(t), 0.f, 0.f, 0.f,
                            wg::map_to_cta(claim_full(slot), 1));
        } else {
          wg::mbar_wait(claim_full(slot), (u >> 1) & 1);
          t = __float_as_int(wg::ld_shared_v4(sClaims + 16 * slot).x);
          __syncwarp();
          if (lane == 0) {
            wg::mbar_arrive_expect_tx(claim_full(slot), 16);  // re-armed before rank 0 may send again
            wg::mbar_arrive_cluster(claim_empty(slot), 0);
          }
        }
        PairItem it{};
        it.t = t;
        if (t >= 0) {
          const PairUnit pu = pair_unit(a, t);
          const CtaPlace cta = cta_place_cell(a, BM, pair_q_tile(a, pu, int(rank)), pu.cell.y, pu.seq);
          // The positions of both tiles' rows: computed where they end their sequence's
          // context, else loaded. Both CTAs find the same span, so the same key tiles.
          const int lo = pair_q_tile(a, pu, 1) * BM, last = min(lo + 2 * BM, cta.rows) - 1;
          int pmin = INT_MAX, pmax = -1;
          if (a.rows_end_context) {
            pmin = cta.first_new_key + lo / a.group, pmax = cta.first_new_key + last / a.group;
          } else {
            for (int r = lo + lane; r <= last; r += 32) {
              const int p = a.positions[cta.q0 + r / a.group];
              pmin = min(pmin, p), pmax = max(pmax, p);
            }
            pmin = __reduce_min_sync(0xffffffffu, pmin), pmax = __reduce_max_sync(0xffffffffu, pmax);
          }
          const bool any_mm = OV && warp_any_image_row(a, cta.q0, lo, last, lane);
          const KeyTiles kt = split_key_tiles(a, cta, pmin, pmax, any_mm, BN, a.key_align);
          it.seq = pu.seq, it.q0 = cta.q0, it.rows = cta.rows, it.row0 = cta.row0, it.kvh = cta.kvh;
          it.split = cta.split, it.kv_len = cta.kv_len, it.first_new_key = cta.first_new_key;
          it.key0 = kt.key0, it.n_tiles = kt.count;
          it.active = !cta.idle();
          it.q_tma = it.active && a.tma_q && cta.row0 + BM <= cta.rows;
        }
        // The unit before has released both Q halves (its last S) before this one is published. A
        // consumer may release the halves of a unit whose Q it does not wait for (no rows here, a
        // gathered tile) as soon as it has read the unit, and two releases ahead of this wait
        // would complete its phase twice: the wait would then be for the phase after (parity).
        if (u > 0) wg::mbar_wait(q_empty(0), (u - 1) & 1), wg::mbar_wait(q_empty(1), (u - 1) & 1);
        if (u >= 2) wg::mbar_wait(item_empty(slot), ((u >> 1) - 1) & 1);
        if (lane == 0) {
          items[slot] = it;
          wg::mbar_arrive(item_full(slot));  // release: the slot's contents before the consumers' acquire
        }
      }
      // The slot, to the other producer warps (named barrier 8: 1-3 are the consumers', 4-7 the
      // row-split softmax's warp pairs).
      asm volatile("bar.sync 8, 128;\n" ::: "memory");
      const PairItem it = items[slot];
      if (it.t < 0) break;
      const KvSource src{a.page_table + int64_t(it.seq) * a.max_pages, it.kv_len, it.kvh};

      // Q of this unit into warpgroup w's half of the tile (slabs 4w .. 4w + 3); their last S of
      // the unit before has read them (waited for above).
      auto load_q = [&]() {
        if (warp != 8 || lane != 0 || !it.q_tma) return;  // cut or idle tiles: the consumers see to them
        for (int w = 0; w < 2; ++w) {
          wg::mbar_arrive_expect_tx(q_full(w), C::kQBytes / 2);
          const int t0 = it.q0 + it.row0 / a.group;
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            const int slab = 4 * w + i;
            wg::tma_load_3d(sQ + slab * (BM * 128), &tma_q, slab * 64, it.kvh * a.group, t0, q_full(w));
          }
        }
      };
      // The next unit is claimed two tiles before this one's last is loaded (attention_wgmma_persistent.cuh
      // says why).
      const int claim_at = max(0, it.n_tiles - 2);
      typename KvTileLoader<C>::TileSrc cur;
      if (rank == 0 && warp == 8 && lane == 0 && claim_at == 0) next = claim();
      if (it.n_tiles > 0) {
        // K of the first tile, then Q, then its V: K's stage and the Q halves free with the last
        // S of the unit before, V's only with its last P·V.
        ld.lookup(src, it.key0, cur);
        ld.load(0, gtile, it.kvh, true, cur);
        load_q();
        ld.load(1, gtile, it.kvh, true, cur);
      } else {
        load_q();
      }
      for (int j = 1; j < it.n_tiles; ++j) {
        if (rank == 0 && warp == 8 && lane == 0 && j == claim_at) next = claim();
        ld.lookup(src, it.key0 + j * BN, cur);
        ld.load(0, gtile + j, it.kvh, true, cur);
        ld.load(1, gtile + j, it.kvh, true, cur);
      }
      gtile += it.n_tiles;
    }
    ld.wait_released(gtile);  // the partner's consumers arrive on these barriers too
    if (pt == 0) {
      // The last CTA out resets the queue for the next launch on this stream.
      __threadfence();
      if (atomicAdd(a.work_queue + 1, 1) == int(gridDim.x) - 1) a.work_queue[0] = 0, a.work_queue[1] = 0;
    }
    cp_async_wait<0>();
  } else {
    wg::setmaxnreg_inc<C::kConsumerRegs>();

    // ---- consumer warpgroups: the same 64 rows, warpgroup w head-dim columns [256w, 256w + 256) ----
    const int wgi = __shfl_sync(0xffffffffu, warp >> 2, 0);
    const int w4 = warp & 3, tq = tid & 127;
    const int dim0 = wgi * 256;
    const int r_lo = w4 * 16 + (lane >> 2);  // this thread's rows r_lo and r_lo + 8 of the tile
    const uint64_t q_desc = wg::desc_sw128(sQ + (dim0 >> 6) * (BM * 128), 16, 1024);
    const uint64_t k_desc = wg::desc_sw128(sK + (dim0 >> 6) * (BN * 128), 16, 1024);
    const uint64_t v_desc = wg::desc_sw128(sV + (dim0 >> 6) * (BN * 128), BN * 128, 1024);
    const RowSplitSoftmax row_split{sX + w4 * (NA * 32), lane, 4 + w4, (w4 >> 1) == wgi};
    const uint32_t o_stage = base + C::kOffO + wgi * C::kOStageBytes;
    auto wg_bar = [&]() {
      if (wgi == 0) asm volatile("bar.sync 2, 128;\n" ::: "memory");
      else asm volatile("bar.sync 3, 128;\n" ::: "memory");
    };
    auto release_here = [&](uint32_t b) {
      if (lane == 0) wg::mbar_arrive(b);
    };
    // A K or V stage: one arrival per warp on both CTAs' barriers (both producers multicast into it).
    auto release = [&](uint32_t b) {
      if (lane == 0) wg::mbar_arrive(b), wg::mbar_arrive_cluster(b, rank ^ 1u);
    };
    auto row_pos = [&](const PairItem& it, int r) {  // -1 past the sequence's end
      const int pr = it.row0 + r;
      return pr >= it.rows ? -1 : a.rows_end_context ? it.first_new_key + pr / a.group : a.positions[it.q0 + pr / a.group];
    };
    float o[128];

    int gtile = 0, q_loads = 0;
    for (int u = 0;; ++u) {
      const PairItem it = wg::take_slot(items, u, item_full(u & 1), item_empty(u & 1));
      if (it.t < 0) break;
      if (!it.active) {
        // No rows here (the partner's tile has them): take part in the unit's tiles only.
        release_here(q_empty(wgi));
        for (int j = 0; j < it.n_tiles; ++j) {
          const int parity = (gtile + j) & 1;
          wg::mbar_wait(bar.full_k(0), parity);
          release(bar.empty_k(0));
          wg::mbar_wait(bar.full_v(0), parity);
          release(bar.empty_v(0));
        }
        gtile += it.n_tiles;
        continue;
      }

      // This thread's rows' positions, and the tile's span for the mask.
      const int qpos[2] = {row_pos(it, r_lo), row_pos(it, r_lo + 8)};
      int wpmin = INT_MAX, wpmax = -1;
      for (int r = lane; r < BM; r += 32) {
        const int p = row_pos(it, r);
        if (p >= 0) wpmin = min(wpmin, p), wpmax = max(wpmax, p);
      }
      wpmin = __reduce_min_sync(0xffffffffu, wpmin), wpmax = __reduce_max_sync(0xffffffffu, wpmax);
      TileRows rows{it.kv_len, a.window, wpmin, wpmax, {qpos[0], qpos[1]}};
      if constexpr (OV) set_overlay(rows, a, it.q0, it.rows, it.first_new_key, it.row0 + r_lo);

      if (it.q_tma) {
        wg::mbar_wait(q_full(wgi), q_loads & 1);
        ++q_loads;
      } else {
        // A tile cut by its sequence's end: this warpgroup gathers its half (zero past the end).
        gather_q_rows<HD, BM, 256>(a, it.place(), sQ + (dim0 >> 6) * (BM * 128), 0, BM, tq, 128, dim0);
        wg_bar();
      }

#pragma unroll
      for (int i = 0; i < 128; ++i) o[i] = 0.f;
      float m_run[2] = {-INFINITY, -INFINITY}, l_run[2] = {0.f, 0.f};
      // A split without keys: O = 0, l = 0. (Released only now: after its Q has landed, so that Q
      // loads and their waits stay one to one.)
      if (it.n_tiles == 0) release_here(q_empty(wgi));
      for (int j = 0; j < it.n_tiles; ++j) {
        const int parity = (gtile + j) & 1, k0 = it.key0 + j * BN;
        float sc[NA];
        wg::mbar_wait(bar.full_k(0), parity);
        wg::fence_proxy_async();
        wg::fence();
        wg_issue_s<C>(sc, q_desc, k_desc, 0);
        wg::wait<0>();
        wg::pin(sc);
        release(bar.empty_k(0));
        if (j == it.n_tiles - 1) release_here(q_empty(wgi));  // the next unit's Q may land in this half
        uint32_t p[NA / 2];
        float alpha[2];
        row_split.template run<NA, OV>(sc, k0, rows, a.scale_log2, m_run, l_run, p, alpha);
        rescale_o_tile(o, alpha);
        wg::mbar_wait(bar.full_v(0), parity);
        wg::fence_proxy_async();
        wg::fence();
        wg_issue_pv<C>(o, p, v_desc, 0);
        wg::wait<0>();
        wg::pin(o);
        release(bar.empty_v(0));
      }
      gtile += it.n_tiles;

      // ---- epilogue: normalise and store this warpgroup's columns of the tile ----
      // A split without keys keeps the initial statistics in both warps; handing them over would
      // race with the next unit's hand-over, which no tile's barriers would separate.
      if (it.n_tiles > 0) row_split.hand_over_stats<NA>(m_run, l_run);
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        l_run[h] += __shfl_xor_sync(0xffffffffu, l_run[h], 1);
        l_run[h] += __shfl_xor_sync(0xffffffffu, l_run[h], 2);
      }
      if (it.q_tma && a.num_splits == 1) {
        // Four rounds of 64 columns through this warpgroup's staging slab, each sent as one TMA
        // box once the previous round's box has read the slab; the last runs on under the next unit.
        const int t0 = it.q0 + it.row0 / a.group;
        const float inv[2] = {l_run[0] > 0.f ? 1.f / l_run[0] : 0.f, l_run[1] > 0.f ? 1.f / l_run[1] : 0.f};
#pragma unroll
        for (int round = 0; round < 4; ++round) {
          if (tq == 0) asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
          wg_bar();
          stage_o_rows<8>(o, inv, o_stage, r_lo, lane, 8 * round);
          wg::fence_proxy_async();  // the stores above, before the TMA engine reads them
          wg_bar();
          if (tq == 0) {
            wg::tma_store_3d(&tma_o, o_stage, dim0 + 64 * round, it.kvh * a.group, t0);
            asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
          }
        }
      } else {
        // Both warpgroups hold the rows' statistics; the first writes them (split partials).
        store_o_direct<HD>(a, o, m_run, l_run, it.place(), it.row0 + r_lo, dim0, lane, wgi == 0);
      }
    }
    // The staging slab must stay until the last box has read it.
    if (tq == 0) asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
  }
  // Neither CTA leaves while the other may still arrive on its barriers or send it a claim.
  wg::cluster_sync();
#else
  __trap();
#endif
}

// One cluster of two CTAs per pair of SMs that can hold one, never more than there are units.
void launch_wgmma_pair_persistent(const TileArgs& a, const TileGrid& g, cudaStream_t stream);

}  // namespace gs::cuda::attn
