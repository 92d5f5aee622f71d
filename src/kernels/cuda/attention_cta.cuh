// What every attention tile kernel (attention_tile.cuh, attention_decode.cuh, attention_wgmma.cuh)
// works out first: where its CTA sits in the grid, which key tiles its split visits, and (the two
// mma.sync kernels) how a K/V tile is gathered through the page table.
#pragma once
#include <cuda_bf16.h>

#include <climits>
#include <cstdint>

#include "kernels/cuda/attention_mma.cuh"
#include "kernels/cuda/attention_params.cuh"

namespace gs::cuda::attn {

// The grid: x = tiles of block_m packed query rows (the last, with the most keys under causal
// masking, start first), y = kv head × split, z = sequence.
struct CtaPlace {
  int seq, kvh, split, q_tile;
  int q0, q_len;              // the sequence's query tokens
  int rows, row0;             // its packed rows (q_len · group) and this CTA's first
  int kv_len, first_new_key;  // keys of this step's rows: [first_new_key, kv_len)
  const int* page_table;      // the sequence's
  // The grid covers the longest sequence; shorter ones leave tiles idle.
  __device__ bool idle() const { return row0 >= rows; }
};

// The grid cell of query tile q_tile, kv head × split `by`, sequence `seq`.
__device__ __forceinline__ CtaPlace cta_place_cell(const TileArgs& a, int block_m, int q_tile, int by, int seq) {
  CtaPlace c;
  c.seq = seq;
  c.kvh = by / a.num_splits;
  c.split = by % a.num_splits;
  c.q0 = a.q_start[c.seq];
  c.q_len = a.q_start[c.seq + 1] - c.q0;
  c.rows = c.q_len * a.group;
  c.q_tile = q_tile;
  c.row0 = c.q_tile * block_m;
  c.kv_len = a.kv_len[c.seq];
  c.first_new_key = c.kv_len - c.q_len;
  c.page_table = a.page_table + int64_t(c.seq) * a.max_pages;
  return c;
}
// The CTA at grid position (bx, by, blockIdx.z) of a grid of gridDim.x query tiles.
__device__ __forceinline__ CtaPlace cta_place_at(const TileArgs& a, int block_m, int bx, int by) {
  return cta_place_cell(a, block_m, int(gridDim.x) - 1 - bx, by, int(blockIdx.z));
}
// Where 16-byte chunk c of the CTA's packed query row r comes from; `ok` false for rows past
// the sequence's end (zero-filled by the caller's copy, never read: the pointer is a.q).
template <int HD>
__device__ __forceinline__ const __nv_bfloat16* q_chunk_src(const TileArgs& a, const CtaPlace& cta, int r, int c,
                                                            bool& ok) {
  const int pr = cta.row0 + r;
  ok = pr < cta.rows;
  if (!ok) return a.q;
  const int t = cta.q0 + pr / a.group, head = cta.kvh * a.group + pr % a.group;
  return a.q + (int64_t(t) * a.num_q_heads + head) * HD + c * 8;
}

__device__ __forceinline__ CtaPlace cta_place(const TileArgs& a, int block_m) {
  return cta_place_at(a, block_m, blockIdx.x, blockIdx.y);
}

// Which grid cell (query tile x, KV head × split y) a wgmma CTA takes, given that the hardware
// starts CTAs in blockIdx order, x fastest. Each head's query tiles still run longest first, head
// after head (its K/V stay in L2 while its tiles pass), except the shortest eighth of every head
// (the first tiles of a causal or windowed prefill, which see the fewest keys): those are held
// back to the end of the launch, longest first across all heads, to fill the SMs that finish
// early in the last wave; tiles taken heads-fastest would lose their K/V to L2 misses instead
// (docs/kernel-policy.md, "Attention: persistent wgmma kernels"). `unit`: CTAs of a cluster, which
// stay adjacent query tiles of one head.
struct GridPos {
  int x, y;
};
// The cell (x: unit along x, 0 = the last query tile, the most keys; y) started `order`-th of a
// grid of units x heads (the persistent kernel's queue hands out its items in this order too).
__device__ __forceinline__ GridPos grid_cell_in_order(int order, int units, int heads) {
  const int held = units / 8, kept = units - held;
  if (order < kept * heads) return {order % kept, order / kept};  // (the plain grid order when nothing is held back)
  const int o = order - kept * heads;
  return {kept + o / heads, o % heads};
}
__device__ __forceinline__ GridPos wgmma_block_order(int unit) {
  const int units = int(gridDim.x) / unit;
  const int order = int(blockIdx.x) / unit + units * int(blockIdx.y);  // launch order of this unit
  const GridPos u = grid_cell_in_order(order, units, int(gridDim.y));
  return {u.x * unit + int(blockIdx.x) % unit, u.y};
}

// The key tiles of bn keys that the CTA's split visits: those its rows, at positions
// [pmin, pmax] (pmax -1: none), can see under causal masking and the window (any_mm: a row is in an
// image block and sees every key of this step too), divided evenly between the splits.
// Tiles start at multiples of bn (tile t holds keys t·bn ..), or, with align < bn, at the first
// visible key rounded down to a multiple of align: a sliding window's range then starts with a
// full tile instead of one cut anywhere by the bn grid (a window of 1024 keys and 64 query
// tokens spans 1087 keys: 17 tiles of 64 from its start, 17.97 on average from the grid).
struct KeyTiles {
  int begin, count;
  int key0;  // first key of tile `begin`; tile begin + j starts at key0 + j·bn
};
__device__ __forceinline__ KeyTiles split_key_tiles(const TileArgs& a, const CtaPlace& c, int pmin, int pmax,
                                                    bool any_mm, int bn, int align = 0) {
  int lo = 0, hi = min(c.kv_len, pmax + 1);
  if (a.window > 0) lo = max(0, pmin - a.window + 1);
  if (any_mm) hi = c.kv_len, lo = min(lo, max(0, c.first_new_key));
  hi = max(hi, lo);
  if (align <= 0 || align > bn) align = bn;
  const int base = lo / align * align;  // first key of tile 0
  const int tiles_lo = (base - base % bn) / bn, tiles_hi = tiles_lo + (hi - base + bn - 1) / bn;
  const int per_split = (tiles_hi - tiles_lo + a.num_splits - 1) / a.num_splits;
  KeyTiles t;
  t.begin = tiles_lo + c.split * per_split;
  t.count = max(0, min(tiles_hi, t.begin + per_split) - t.begin);
  t.key0 = base + (t.begin - tiles_lo) * bn;
  return t;
}

// Whether a packed row in [lo, last] of a sequence starting at token q0 is in an image block (the
// vision overlay; false without it): such a CTA's key range also covers this step's keys
// (split_key_tiles). Warp-wide: every lane gets the answer. Text-only launches pay nothing.
__device__ __forceinline__ bool warp_any_image_row(const TileArgs& a, int q0, int lo, int last, int lane) {
  if (a.mm_block == nullptr) return false;
  bool any = false;
  for (int r = lo + lane; r <= last; r += 32) any |= a.mm_block[q0 + r / a.group] >= 0;
  return __any_sync(0xffffffffu, any);
}

// Whether key tile `tile` (bn keys) holds only keys cached by earlier steps: keys below
// first_new_key, which the kernel right before attention (qkv_prepare, writing this step's keys)
// does not touch, so its copies may be issued before the PDL wait (launch_util.h). Positions,
// lengths and page tables were copied in before the step's first kernel.
__device__ __forceinline__ bool tile_is_cached(const CtaPlace& c, int tile, int bn) {
  return min((tile + 1) * bn, c.kv_len) <= c.first_new_key;
}

// Each of the CTA's block_m rows' position and image block (-1 past the end) into shared memory.
__device__ __forceinline__ void load_row_info(const TileArgs& a, const CtaPlace& c, int block_m, int* sRowPos,
                                              int* sRowBlk, int tid, int nt) {
  for (int r = tid; r < block_m; r += nt) {
    int pos = -1, blk = -1;
    if (c.row0 + r < c.rows) {
      const int t = c.q0 + (c.row0 + r) / a.group;
      pos = a.positions[t];
      if (a.mm_block) blk = a.mm_block[t];
    }
    sRowPos[r] = pos;
    sRowBlk[r] = blk;
  }
}

// The smallest and largest position of the CTA's rows (pmax -1: none) and whether one is in an
// image block, from the row info above (after a barrier; every thread scans: block_m is 16-64).
struct RowSpan {
  int pmin, pmax;
  bool any_mm;
};
__device__ __forceinline__ RowSpan row_span(const int* sRowPos, const int* sRowBlk, int block_m) {
  RowSpan s{INT_MAX, -1, false};
  for (int r = 0; r < block_m; ++r) {
    const int p = sRowPos[r];
    if (p >= 0) s.pmin = min(s.pmin, p), s.pmax = max(s.pmax, p);
    s.any_mm |= sRowBlk[r] >= 0;
  }
  return s;
}

// Issues the cp.async copies of key tile `tile` (keys tile·BN ..) of K and V into dK / dV (BN rows
// of HD, swizzled) and, for image rows, the keys' image blocks into key_blk. Keys past kv_len and
// keys on freed pages (-1) are zero-filled without a read. A thread always copies the same 16-byte
// chunk column of rows r0, r0 + NT/chunks, ...
template <int HD, int BN, int NT>
__device__ __forceinline__ void load_kv_tile(const TileArgs& a, const CtaPlace& c, bool any_mm, int tile,
                                             __nv_bfloat16* dK, __nv_bfloat16* dV, int* key_blk, int tid) {
  constexpr int kChunks = HD / 8, kLoadIters = BN * kChunks / NT;
  static_assert(NT % kChunks == 0 && (BN * kChunks) % NT == 0, "uniform chunk ownership");
  const int ld_c = tid % kChunks, ld_r0 = tid / kChunks;
  const int64_t head_off = int64_t(c.kvh) * HD + ld_c * 8;
  const int k0 = tile * BN;
#pragma unroll
  for (int j = 0; j < kLoadIters; ++j) {
    const int r = ld_r0 + j * (NT / kChunks), key = k0 + r;
    const __nv_bfloat16* srcK = a.k;
    const __nv_bfloat16* srcV = a.v;
    bool ok = false;
    if (key < c.kv_len) {
      // Power-of-two pages (the usual case) avoid an integer division per row.
      const int lp = a.page_shift >= 0 ? key >> a.page_shift : key / a.page_size;
      const int slot = a.page_shift >= 0 ? key & (a.page_size - 1) : key - lp * a.page_size;
      const int page = c.page_table[lp];
      if (page >= 0) {
        const int64_t off = int64_t(page) * a.page_stride + int64_t(slot) * a.token_stride + head_off;
        srcK = a.k + off, srcV = a.v + off, ok = true;
      }
    }
    cp_async16(dK + swz<HD>(r, ld_c), srcK, ok);
    cp_async16(dV + swz<HD>(r, ld_c), srcV, ok);
  }
  if (any_mm)
    for (int r = tid; r < BN; r += NT) {
      const int key = k0 + r;
      key_blk[r] = (key >= c.first_new_key && key < c.kv_len) ? a.mm_block[c.q0 + key - c.first_new_key] : -1;
    }
}

// What the mma.sync kernels work out before their PDL wait, from their rows' positions (sRowPos /
// sRowBlk, after a barrier): the rows' span, the split's key tiles, and the copies of those of
// the first STAGES tiles that hold only cached keys, issued now (bit s of `early`); the kernel
// issues the others after its wait.
struct SplitStart {
  RowSpan span;
  KeyTiles tiles;
  unsigned early;
};
template <int HD, int BN, int NT, int STAGES>
__device__ __forceinline__ SplitStart start_split(const TileArgs& a, const CtaPlace& c, int block_m,
                                                  const int* sRowPos, const int* sRowBlk, __nv_bfloat16* sK,
                                                  __nv_bfloat16* sV, int* sKeyBlk, int tid) {
  SplitStart st;
  st.span = row_span(sRowPos, sRowBlk, block_m);
  st.tiles = split_key_tiles(a, c, st.span.pmin, st.span.pmax, st.span.any_mm, BN);
  st.early = 0;
#pragma unroll
  for (int s = 0; s < STAGES; ++s)
    if (s < st.tiles.count && tile_is_cached(c, st.tiles.begin + s, BN)) {
      load_kv_tile<HD, BN, NT>(a, c, st.span.any_mm, st.tiles.begin + s, sK + s * BN * HD, sV + s * BN * HD,
                               sKeyBlk + s * BN, tid);
      st.early |= 1u << s;
    }
  return st;
}


}  // namespace gs::cuda::attn
