// Hopper (sm_90a) paged attention for prefill-like batches: FlashAttention-3 structure on the
// warpgroup tensor-core instructions.
//
// CTA: 3 warpgroups. Warps 0-7 are two consumer warpgroups that issue wgmma; warps 8-11 are the
// producer (registers handed to the consumers with setmaxnreg), which gathers K and V tiles through the page table into shared memory with cp.async (16-byte
// copies, zero fill for keys past kv_len and on freed pages, so those are never read) and signals
// each landed tile on an mbarrier (cp.async.mbarrier.arrive). Consumers release a stage on an
// "empty" mbarrier as soon as the wgmma that read it has completed, so the producer refills it
// while they run softmax and the other product. cp.async (rather than TMA) because a page gather
// of 16-token pages with per-key validity is what cp.async's zero fill does for free; the layout
// it writes is exactly the one TMA's 128-byte swizzle would.
//
// Q and O cross by TMA where a query tile is whole (every row a query row of its sequence): a
// producer thread issues Q's boxes at kernel entry, completing on their own mbarrier, and each
// consumer warpgroup writes its normalised O into its part of the Q tile and sends it out as
// boxes, which halves a CTA's time to its first S and its epilogue (docs/kernel-policy.md,
// "Attention: wgmma prefill"). A tile cut by its sequence's end gathers Q with cp.async and stores
// O directly, as the split partials always are.
//
// Shared-memory layout of every operand tile (Q, K, V): 128-byte-swizzled "slabs" of 64 head-dim
// columns: slab s holds columns [64s, 64s + 64) of every row, one 128-byte line per row, and the
// 16-byte chunk c of row r sits at chunk position c ^ (r & 7). Slabs start 1024-byte aligned. This
// is the canonical K-major SW128 layout for Q (A of S = Q·Kᵀ) and K (B of S), and the same bytes
// are the canonical MN-major SW128 layout for V as B of O = P·V (N = head dim is the contiguous
// direction), so K and V are stored alike and only their descriptors differ.
//
// Rows: query heads sharing a KV head are packed into rows (row pr = token i·group + head g), as
// in the mma.sync kernels, so K/V are read once per group.
//
// Each consumer warpgroup issues one product at a time (S, then P·V of the same key tile, 64
// keys); the two warpgroups overlap each other (hd256; hd512's S exchange keeps them in step).
//
// Head dim 256: each consumer warpgroup owns 64 rows (128 per CTA); S is 64 x 64 f32 (32
// registers per thread), O is 64 x 256 f32 (128 registers).
// Head dim 512: a 64 x 512 f32 O (256 registers per thread) does not fit one warpgroup. Both
// warpgroups take the same 64 rows; warpgroup w owns output columns [256w, 256w + 256) and
// computes the half contraction S_w = Q[:, half w]·K[:, half w]ᵀ. The halves are summed through
// shared memory, then each does P·V[:, half w]. No product is computed twice. Each row's softmax
// is computed once, in the warp of one warpgroup or the other, which hands P and the rescale
// factors to its partner warp (kRowSplitSoftmax: two warps on one SM sub-partition do not issue
// the same softmax).
//
// The vision-block overlay (gemma4-architecture.md §3.4): a CTA with a row in an image block also
// visits this step's keys (split_key_tiles, any_mm), and the mask of its boundary tiles lets an
// image row see the keys of its own block (softmax_tile, TileRows::mm). Warps without image rows,
// and whole launches without the overlay, keep the text mask and key range unchanged.
#pragma once
#include <cuda.h>  // CUtensorMap (a type only: nothing of the driver library is linked)
#include <cuda_bf16.h>

#include <atomic>
#include <climits>
#include <cstdint>
#include <string>

#include "kernels/cuda/attention_cta.cuh"
#include "kernels/cuda/attention_params.cuh"
#include "kernels/cuda/attention_wgmma_exchange.cuh"
#include "kernels/cuda/attention_wgmma_producer.cuh"
#include "kernels/cuda/attention_wgmma_step.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launch_util.h"  // allow_smem_on_current_device

namespace gs::cuda::attn {

// TMA: K/V by TMA in CTA pairs (the hd512 kernel); without it, by the producer's cp.async
// gather (hd256).
template <int HD, bool TMA = false>
struct WgConfig {
  static constexpr int kHeadDim = HD;
  // Key tiles whose keys are all below kv_len and on live pages are loaded with TMA boxes of
  // a.tma_box_rows keys x 64 columns (one per page piece and slab, issued by one thread); the
  // others (the last tile, tiles reaching freed pages) keep the cp.async zero-fill gather.
  static constexpr bool kTma = TMA;
  // TMA variants run as clusters of two CTAs (adjacent query tiles of one KV head) that visit
  // the union of their key ranges and share every TMA-loaded K/V tile: each CTA loads half of
  // its slabs and multicasts them to both, so K/V cross from L2 once per 2·kBlockM rows.
  static constexpr bool kPair = TMA;
  static constexpr bool kSplitD = HD == 512;  // warpgroups split the head dim (see above)
  static constexpr int kBlockM = kSplitD ? 64 : 128;  // packed query rows per CTA
  static constexpr int kBlockN = 64;                  // keys per tile
  // K and V stages. hd512: Q 64 KB + K 64 KB + V 64 KB + S exchange 32 KB = 224 KB, one stage
  // each; K of tile j+1 still loads during softmax and P·V of tile j, V of j+1 during S of j+1.
  static constexpr int kStages = kSplitD ? 1 : 2;
  // Split d: the softmax of a key tile is computed once per row, not by both warpgroups.
  // Warp w of warpgroup 0 and warp w of warpgroup 1 hold the same 16 rows (and sit on the same
  // SM sub-partition); warps 0-1 of warpgroup 0 and warps 2-3 of warpgroup 1 compute the softmax
  // of their rows, and their partners take P and the rescale factors from shared memory.
  static constexpr bool kRowSplitSoftmax = kSplitD;
  static constexpr int kKeysPerLane = kBlockN / 32;  // page lookups per producer lane and tile
  static constexpr int kAcc = kBlockN / 2;           // S accumulator registers per consumer thread
  // Registers per thread after setmaxnreg: the producer needs few, the consumers' O alone is
  // 128 and S another kBlockN / 2. 2 x 128 x consumer + 128 x producer <= 64K.
  static constexpr int kProducerRegs = 72;
  static constexpr int kConsumerRegs = 216;
  static constexpr int kDimsPerWg = kSplitD ? HD / 2 : HD;  // S contraction and O columns per warpgroup
  static constexpr int kConsumerThreads = 256;
  static constexpr int kThreads = kConsumerThreads + 128;   // + the producer warpgroup
  static constexpr int kChunks = HD / 8;                    // 16-byte chunks per row
  static constexpr uint32_t kQBytes = kBlockM * HD * 2;
  static constexpr uint32_t kTileBytes = kBlockN * HD * 2;  // one K (or V) stage
  // The split-d S exchange: both warpgroups' halves (64 x kBlockN f32 each).
  static constexpr uint32_t kXHalfBytes = 64 * kBlockN * 4;  // one warpgroup's half of S
  static constexpr uint32_t kXBytes = kSplitD ? 2 * kXHalfBytes : 0;
  static constexpr uint32_t kOffK = kQBytes;
  static constexpr uint32_t kOffV = kOffK + kStages * kTileBytes;
  static constexpr uint32_t kOffX = kOffV + kStages * kTileBytes;
  // 4 barriers per stage, then Q's.
  static constexpr uint32_t kOffBar = kOffX + kXBytes;
  static constexpr uint32_t kOffRows = kOffBar + (4 * kStages + 1) * 8;
  static constexpr size_t kSmemBytes = 1024 /* alignment slack */ + kOffRows + (kPair ? 2 : 1) * kBlockM * 4;
  static_assert(kDimsPerWg == 256, "one m64n256 accumulator per consumer warpgroup");
  static_assert(kSmemBytes <= 232448, "over the 227 KB a CTA may use");
};

// OV: the launch has the vision overlay (TileArgs::mm_block set); text-only launches run the
// instantiation without it.
template <class C, bool OV>
__global__ void __launch_bounds__(C::kThreads, 1)
    attention_wgmma_kernel(const TileArgs a, const __grid_constant__ CUtensorMap tma_k,
                           const __grid_constant__ CUtensorMap tma_v, const __grid_constant__ CUtensorMap tma_q,
                           const __grid_constant__ CUtensorMap tma_o) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr int HD = C::kHeadDim, BM = C::kBlockM, BN = C::kBlockN, ST = C::kStages;
  constexpr bool SPLIT = C::kSplitD;
  using bf16 = __nv_bfloat16;

  extern __shared__ __align__(1024) uint8_t smem_raw[];
  const AlignedSmem aligned = align_smem_1024(smem_raw);
  const uint32_t base = aligned.base;
  uint8_t* smem = aligned.ptr;
  const uint32_t sQ = base, sK = base + C::kOffK, sV = base + C::kOffV;
  float* sX = reinterpret_cast<float*>(smem + C::kOffX);
  const WgBarriers<C> bar{base + C::kOffBar};
  int* sRowPos = reinterpret_cast<int*>(smem + C::kOffRows);

  // Cluster pair (kPair): CTA rank blockIdx.x & 1 of a cluster of two along x. It shares K/V with
  // its partner only when both have rows and TMA is on; both CTAs decide alike from the same
  // numbers, and an unpaired CTA touches nothing of the other.
  uint32_t cluster_ctas = 1;
  if constexpr (C::kPair) asm("mov.u32 %0, %%cluster_nctarank;\n" : "=r"(cluster_ctas));
  const GridPos at = wgmma_block_order(int(cluster_ctas));
  const int bx = at.x;
  const CtaPlace cta = cta_place_at(a, BM, bx, at.y);
  if (cta.idle()) return;
  const uint32_t rank = blockIdx.x & 1;
  const int partner_row0 = (int(gridDim.x) - 1 - (bx ^ 1)) * BM;
  const bool paired = C::kPair && cluster_ctas == 2 && a.tma_box_rows > 0 && partner_row0 < cta.rows;
  const int range_rows = paired ? 2 * BM : BM;  // rows whose keys this CTA visits
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;

  // Q by TMA boxes of 64 rows (64 / group tokens x group heads x 64 columns) when the launcher
  // made the tensor maps (a.tma_q) and every row of the tile is a query row of this sequence; a
  // tile cut by the sequence's end keeps the cp.async gather (a box would read the next
  // sequence's tokens, and its store would overwrite them).
  const bool q_by_tma = a.tma_q && cta.row0 + BM <= cta.rows;

  // ---- set-up, all threads: barriers, row positions ----
  if (tid == 0) {
    for (int s = 0; s < ST; ++s) {
      wg::mbar_init(bar.full_k(s), 128), wg::mbar_init(bar.full_v(s), 128);  // every producer thread
      // One arrival per consumer warp, of both CTAs when paired.
      wg::mbar_init(bar.empty_k(s), paired ? 16 : 8), wg::mbar_init(bar.empty_v(s), paired ? 16 : 8);
    }
    if (paired) asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  if (q_by_tma && tid == C::kConsumerThreads) {
    // Issued first of all loads, by a thread that reads no row position (those reads start the
    // chain to the first K tile): the first S waits for Q, and a 16-byte gather of it by the
    // consumers costs a good part of a CTA (the file comment). The consumers wait
    // on q_full only after the barrier below, which orders this init before their waits.
    wg::mbar_init(bar.q_full(), 1);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    wg::mbar_arrive_expect_tx(bar.q_full(), C::kQBytes);
    const int t0 = cta.q0 + cta.row0 / a.group;
#pragma unroll
    for (int b = 0; b < BM / 64; ++b)
#pragma unroll
      for (int slab = 0; slab < HD / 64; ++slab)
        wg::tma_load_3d(sQ + slab * (BM * 128) + b * 64 * 128, &tma_q, slab * 64, cta.kvh * a.group,
                        t0 + b * (64 / a.group), bar.q_full());
  }
  // Positions of this CTA's rows, then (paired) of the partner's. Computed where the rows end
  // their sequences' contexts (prefill, chunked prefill): a global load less on the chain to the
  // first K tile (row positions -> key range -> page table -> K).
  for (int r = tid; r < range_rows; r += C::kThreads) {
    const int pr = r < BM ? cta.row0 + r : partner_row0 + r - BM;
    sRowPos[r] = pr >= cta.rows        ? -1
                 : a.rows_end_context ? cta.first_new_key + pr / a.group
                                      : a.positions[cta.q0 + pr / a.group];
  }
  __syncthreads();
  // Both CTAs' barriers initialised before either touches the other's.
  if (paired) wg::cluster_sync();

  // Key tiles to visit (identical for every warp: the barriers count tiles; paired: the union of
  // both CTAs' ranges, identical in both).
  int pmin = INT_MAX, pmax = -1;
  for (int r = lane; r < range_rows; r += 32) {
    const int p = sRowPos[r];
    if (p >= 0) pmin = min(pmin, p), pmax = max(pmax, p);
  }
  pmin = __reduce_min_sync(0xffffffffu, pmin), pmax = __reduce_max_sync(0xffffffffu, pmax);
  // Image rows (of either CTA when paired) extend the range to this step's keys. Tile it covers
  // keys key0 + it·BN ..
  bool any_mm = false;
  if constexpr (OV) {
    any_mm = warp_any_image_row(a, cta.q0, cta.row0, min(cta.row0 + BM, cta.rows) - 1, lane);
    if (range_rows > BM)
      any_mm |= warp_any_image_row(a, cta.q0, partner_row0, min(partner_row0 + BM, cta.rows) - 1, lane);
  }
  const KeyTiles kt = split_key_tiles(a, cta, pmin, pmax, any_mm, BN, a.key_align);
  const int key0 = kt.key0, n_tiles = kt.count;

  if (warp >= 8) {
    wgmma_produce_kv<C>(a, cta, bar, sK, sV, key0, n_tiles, paired, rank, &tma_k, &tma_v, tid);
    return;
  }
  wg::setmaxnreg_inc<C::kConsumerRegs>();

  if (q_by_tma) {
    wg::mbar_wait(bar.q_full(), 0);
  } else {
    // The Q tile (zero rows past the end), by the consumers alone: the producer has already
    // started on K/V meanwhile.
    gather_q_rows<HD, BM>(a, cta, sQ, 0, BM, tid, C::kConsumerThreads);
    wg::consumer_bar_sync();
  }

  // ---- consumer warpgroups ----
  // 0 or 1; through a shuffle so the compiler knows it is warp-uniform and keeps the operand
  // descriptors built from it in uniform registers (else every wgmma pays R2UR moves).
  const int wgi = __shfl_sync(0xffffffffu, warp >> 2, 0);
  const int w4 = warp & 3;                         // warp within the warpgroup: rows 16·w4 ..
  const int wg_row0 = SPLIT ? 0 : wgi * 64;        // first CTA row of this warpgroup
  const int dim0 = SPLIT ? wgi * 256 : 0;          // first head-dim column of this warpgroup
  const int tq = tid & 127;                        // thread within the warpgroup
  const int r_lo = wg_row0 + w4 * 16 + (lane >> 2);
  const int qpos[2] = {sRowPos[r_lo], sRowPos[r_lo + 8]};
  int wpmin = INT_MAX, wpmax = -1;                 // this warpgroup's rows, for skipping the mask
  for (int r = wg_row0 + lane; r < wg_row0 + 64; r += 32) {
    const int p = sRowPos[r];
    if (p >= 0) wpmin = min(wpmin, p), wpmax = max(wpmax, p);
  }
  wpmin = __reduce_min_sync(0xffffffffu, wpmin), wpmax = __reduce_max_sync(0xffffffffu, wpmax);

  // A stage read by this warp's wgmma may be refilled: one arrival per warp, on both CTAs' empty
  // barriers when paired (the producers multicast into both).
  auto release = [&](uint32_t bar) {
    if (lane == 0) {
      wg::mbar_arrive(bar);
      if (paired) wg::mbar_arrive_cluster(bar, rank ^ 1u);
    }
  };

  float o[128];
#pragma unroll
  for (int i = 0; i < 128; ++i) o[i] = 0.f;
  float m_run[2] = {-INFINITY, -INFINITY}, l_run[2] = {0.f, 0.f};

  // Operand descriptors: built once from the tile bases (see wg_issue_s).
  const uint64_t q_desc = wg::desc_sw128(sQ + (dim0 >> 6) * (BM * 128) + wg_row0 * 128, 16, 1024);
  const uint64_t k_desc = wg::desc_sw128(sK + (dim0 >> 6) * (BN * 128), 16, 1024);
  const uint64_t v_desc = wg::desc_sw128(sV + (dim0 >> 6) * (BN * 128), BN * 128, 1024);
  constexpr int NA = C::kAcc;
  auto issue_s = [&](float (&sc)[NA], int s) { wg_issue_s<C>(sc, q_desc, k_desc, s); };
  auto issue_pv = [&](const uint32_t (&p)[NA / 2], int s) { wg_issue_pv<C>(o, p, v_desc, s); };
  TileRows rows{cta.kv_len, a.window, wpmin, wpmax, {qpos[0], qpos[1]}};
  if constexpr (OV) set_overlay(rows, a, cta.q0, cta.rows, cta.first_new_key, cta.row0 + r_lo);
  auto softmax = [&](float (&sc)[NA], int k0, float (&alpha)[2]) {
    softmax_tile<BN, OV>(sc, k0, rows, a.scale_log2, lane, m_run, l_run, alpha);
  };
  auto pack_p = [&](const float (&sc)[NA], uint32_t (&p)[NA / 2]) { pack_p_tile<NA>(sc, p); };
  // Split d: S's two half contractions summed and its softmax computed once per row by warp
  // pairs across the warpgroups (kRowSplitSoftmax, attention_wgmma_exchange.cuh).
  const RowSplitSoftmax row_split{sX + w4 * (NA * 32), lane, 4 + w4, (w4 >> 1) == wgi};
  auto softmax_row_split = [&](float (&sc)[NA], int k0, uint32_t (&p)[NA / 2], float (&alpha)[2]) {
    row_split.template run<NA, OV>(sc, k0, rows, a.scale_log2, m_run, l_run, p, alpha);
  };
  auto rescale_o = [&](const float (&alpha)[2]) { rescale_o_tile(o, alpha); };

  // One product at a time per warpgroup (the file comment).
  for (int it = 0; it < n_tiles; ++it) {
    const int s = it % ST, parity = (it / ST) & 1, k0 = key0 + it * BN;
    float sc[NA];
    wg::mbar_wait(bar.full_k(s), parity);
    wg::fence_proxy_async();
    wg::fence();
    issue_s(sc, s);
    wg::wait<0>();
    wg::pin(sc);
    release(bar.empty_k(s));
    uint32_t p[NA / 2];
    float alpha[2];
    if constexpr (C::kRowSplitSoftmax) {
      softmax_row_split(sc, k0, p, alpha);
      rescale_o(alpha);
    } else {
      softmax(sc, k0, alpha);
      pack_p(sc, p);
      rescale_o(alpha);
    }
    wg::mbar_wait(bar.full_v(s), parity);
    wg::fence_proxy_async();
    wg::fence();
    issue_pv(p, s);
    wg::wait<0>();
    wg::pin(o);
    release(bar.empty_v(s));
  }

  if constexpr (C::kRowSplitSoftmax) row_split.hand_over_stats<NA>(m_run, l_run);
  // ---- epilogue: normalise and store this warpgroup's rows and columns ----
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    l_run[h] += __shfl_xor_sync(0xffffffffu, l_run[h], 1);
    l_run[h] += __shfl_xor_sync(0xffffffffu, l_run[h], 2);
  }
  if (a.tma_q && a.num_splits == 1 && cta.row0 + wg_row0 + 64 <= cta.rows) {
    // The normalised bf16 O goes into this warpgroup's part of the Q tile, in the same swizzled
    // slabs, and leaves by TMA boxes, not as the 64 scattered 4-byte stores per thread of the path
    // below (the file comment). Only this warpgroup reads these Q rows (hd256) or
    // columns (hd512), and its last S has completed. The 4 lanes of a row write one 16-byte
    // chunk, the 8 rows of a warp 8 different chunk positions: no bank conflicts.
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = r_lo + 8 * h;
      const float inv = l_run[h] > 0.f ? 1.f / l_run[h] : 0.f;
      const uint32_t row = sQ + (dim0 >> 6) * (BM * 128) + r * 128 + (lane & 3) * 4;
#pragma unroll
      for (int j = 0; j < 32; ++j) {
        const uint32_t dst = row + (j >> 3) * (BM * 128) + (((j & 7) ^ (r & 7)) << 4);
        const uint32_t v = pack_bf16x2(o[4 * j + 2 * h] * inv, o[4 * j + 2 * h + 1] * inv);
        asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(dst), "r"(v) : "memory");
      }
    }
    wg::fence_proxy_async();  // the stores above, before the TMA engine reads them
    // This warpgroup's 128 threads only (named barriers 2 and 3; 1 is both consumer warpgroups').
    if (wgi == 0) asm volatile("bar.sync 2, 128;\n" ::: "memory");
    else asm volatile("bar.sync 3, 128;\n" ::: "memory");
    if (tq == 0) {
      const int t0 = cta.q0 + (cta.row0 + wg_row0) / a.group;
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int slab = (dim0 >> 6) + i;
        wg::tma_store_3d(&tma_o, sQ + slab * (BM * 128) + wg_row0 * 128, slab * 64, cta.kvh * a.group, t0);
      }
      wg::tma_store_commit_and_wait_read();
    }
    return;
  }
  // Split d: both warpgroups hold the same rows and statistics, one writes them.
  store_o_direct<HD>(a, o, m_run, l_run, cta, cta.row0 + r_lo, dim0, lane, !SPLIT || wgi == 0);
#else
  // Built for another architecture: the dispatcher never launches this kernel there.
  __trap();
#endif
}

// Tensor map of one K or V cache layer as [tokens][kv_heads][d] (innermost last), boxes of
// `box_rows` keys x 1 head x 64 columns, 128-byte swizzle: one box lands as box_rows 128-byte
// lines of a slab, in the same swizzled layout the cp.async path writes. Defined in attention_wgmma.cu.
void encode_kv_tensor_map(CUtensorMap* map, const __nv_bfloat16* base, int head_dim, int kv_heads, int64_t tokens,
                          int box_rows);
// The same for Q or O ([tokens][heads][d]), boxes of box_heads heads x box_tokens tokens.
void encode_head_tensor_map(CUtensorMap* map, const __nv_bfloat16* base, int head_dim, int heads, int64_t tokens,
                            int box_heads, int box_tokens);
// Whether the wgmma kernels load Q and store O by TMA (the policy's attention.tma_qo, on by
// default). Defined in attention_wgmma.cu.
bool wgmma_tma_q_enabled();

// Where the wgmma kernels' key tiles start: at the first visible key rounded down to 16 (TMA
// boxes of 8 or 16 keys then never straddle a page), or, with the policy's
// attention.aligned_key_tiles (A/B runs), at multiples of the tile's keys as the mma.sync kernels
// do. Defined in attention_wgmma.cu.
int wgmma_key_align();

// Before a wgmma launch: Q and O as [tokens][query heads][d] tensor maps with boxes of 64 rows
// (64 / group tokens x group heads), a.tma_q set where they apply, and a.key_align.
inline void prepare_qo_and_keys(TileArgs& a, int head_dim, CUtensorMap& map_q, CUtensorMap& map_o) {
  a.tma_q = 0;
  if (wgmma_tma_q_enabled() && a.group >= 1 && 64 % a.group == 0 && a.num_tokens > 0) {
    encode_head_tensor_map(&map_q, a.q, head_dim, a.num_q_heads, a.num_tokens, a.group, 64 / a.group);
    encode_head_tensor_map(&map_o, a.out, head_dim, a.num_q_heads, a.num_tokens, a.group, 64 / a.group);
    a.tma_q = 1;
  }
  a.key_align = wgmma_key_align();
}

// The launch configuration of a grid of clusters of two CTAs along x. Not copyable: cfg points
// at attr.
struct PairClusterLaunch {
  cudaLaunchConfig_t cfg{};
  cudaLaunchAttribute attr{};
  PairClusterLaunch(dim3 grid, int threads, size_t smem_bytes, cudaStream_t stream) {
    cfg.gridDim = grid;
    cfg.blockDim = dim3(threads);
    cfg.dynamicSmemBytes = smem_bytes;
    cfg.stream = stream;
    attr.id = cudaLaunchAttributeClusterDimension;
    attr.val.clusterDim.x = 2, attr.val.clusterDim.y = 1, attr.val.clusterDim.z = 1;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
  }
  PairClusterLaunch(const PairClusterLaunch&) = delete;
  PairClusterLaunch& operator=(const PairClusterLaunch&) = delete;
};

template <class C>
void launch_wgmma_config(const TileArgs& a_in, const TileGrid& g, cudaStream_t stream) {
  TileArgs a = a_in;
  CUtensorMap map_k{}, map_v{}, map_q{}, map_o{};
  a.tma_box_rows = 0;
  prepare_qo_and_keys(a, C::kHeadDim, map_q, map_o);
  if constexpr (C::kTma) {
    // Boxes must not straddle a page (pages are not contiguous in the pool) and must tile 64 keys.
    const int box = a.page_size % 16 == 0 ? 16 : a.page_size % 8 == 0 ? 8 : 0;
    if (box > 0) {
      const int kv_heads = a.token_stride / C::kHeadDim;
      const int64_t tokens = int64_t(a.pool_pages) * a.page_size;
      encode_kv_tensor_map(&map_k, a.k, C::kHeadDim, kv_heads, tokens, box);
      encode_kv_tensor_map(&map_v, a.v, C::kHeadDim, kv_heads, tokens, box);
      a.tma_box_rows = box;
    }
  }
  const bool ov = a.mm_block != nullptr;
  const auto kernel = ov ? attention_wgmma_kernel<C, true> : attention_wgmma_kernel<C, false>;
  allow_smem_on_current_device(reinterpret_cast<const void*>(kernel), C::kSmemBytes);
  if (C::kPair && a.tma_box_rows > 0 && g.q_tiles > 1) {
    // Clusters of two along x over an even number of query tiles (a CTA past the rows exits at
    // once; one query tile, as in decode and verify batches: no partner, plain launch).
    const int x = (g.q_tiles + 1) & ~1;
    PairClusterLaunch launch(dim3(x, g.kv_heads * a.num_splits, g.num_seqs), C::kThreads, C::kSmemBytes, stream);
    GS_CUDA_CHECK(cudaLaunchKernelEx(&launch.cfg, kernel, a, map_k, map_v, map_q, map_o));
  } else {
    const dim3 grid(g.q_tiles, g.kv_heads * a.num_splits, g.num_seqs);
    kernel<<<grid, C::kThreads, C::kSmemBytes, stream>>>(a, map_k, map_v, map_q, map_o);
  }
  GS_CUDA_LAUNCHED("attention_wgmma_kernel");
}

}  // namespace gs::cuda::attn
