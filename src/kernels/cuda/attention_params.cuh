// What the attention launchers pass to the kernels, and the tile shapes the dispatcher chooses
// from. Kept apart from the kernel templates so the dispatcher compiles without them.
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace gs::cuda::attn {

// The most key splits a launch takes (the combine's limit, attention_combine.cuh).
constexpr int kMaxAttentionSplits = 128;
// Splits whose partials the combine kernel loads in one round trip (attention_combine.cu); the
// planner splits past it only where that pays (attention_dispatch.cpp).
constexpr int kCombineBatchSplits = 32;

// Everything one launch needs, by value (kernel parameter space). Pointers are device pointers.
struct TileArgs {
  const __nv_bfloat16* q = nullptr;  // [T, Nq·d]
  __nv_bfloat16* out = nullptr;      // [T, Nq·d]
  const __nv_bfloat16* k = nullptr;  // the cache layer's K: [num_pages, page_size, kv_heads, d]
  const __nv_bfloat16* v = nullptr;  // likewise V
  const int* positions = nullptr;    // [T]
  const int* q_start = nullptr;      // [S+1]
  const int* kv_len = nullptr;       // [S]
  const int* mm_block = nullptr;     // [T]; null when the vision overlay is off
  bool mm_in_window = false;         // the overlay only adds keys the sliding window admits (transformers 5.17)
  const int* page_table = nullptr;   // [S, max_pages]
  int max_pages = 0;
  int page_size = 0;
  int page_shift = -1;               // log2(page_size) when a power of two, else -1
  int64_t page_stride = 0;           // elements from one page to the next (page_size·kv_heads·d)
  int token_stride = 0;              // elements from one key to the next in a page (kv_heads·d)
  int num_q_heads = 0;
  int group = 0;                     // query heads per KV head
  int window = 0;                    // 0: causal only
  float scale_log2 = 0.f;            // scale · log2(e): softmax runs on exp2
  int num_tokens = 0;
  int num_splits = 1;
  float* part_o = nullptr;           // [splits, T, Nq, d] unnormalised O (num_splits > 1)
  float* part_ml = nullptr;          // [splits, T, Nq, 2] running max (log2 domain) and sum
  int* split_counters = nullptr;     // zeroed [seqs · q_tiles · kv_heads] arrival counters: when set
                                     // (and splits > 1) the last split CTA combines (tile/decode kernels)
  int pool_pages = 0;                // pages in the cache layer (bounds of the wgmma kernels' TMA maps)
  int tma_box_rows = 0;              // wgmma TMA variants: keys per TMA box (set by their launcher)
  int key_align = 0;                 // wgmma kernels: key tiles start at a multiple of this (0: of
                                     // the tile's keys); set by their launcher
  int tma_q = 0;                     // wgmma kernels: Q loaded and O stored by TMA where a tile is
                                     // whole (set by their launcher)
  int rows_end_context = 0;          // wgmma kernels: AttentionBatch::rows_end_context, so a row's
                                     // position needs no load. A property of the batch like
                                     // `positions`: a graph that replays these args must only see
                                     // batches where it holds.
  // The persistent kernels (Hd256WgmmaPersistent, Hd512WgmmaPairPersistent): their queue, [next
  // item, CTAs done], left at zero by every launch, and the grid its items are the cells of (query
  // tiles, or pairs of them, x heads x sequences; set by launch_plan / the launchers).
  int* work_queue = nullptr;
  int item_q_tiles = 0, item_heads = 0, item_seqs = 0;
};

// The tile kernels the dispatcher can choose (attention_dispatch.cpp, with the kernel policy's
// switches and the persistent kernels' fallbacks; docs/kernel-policy.md lists them by shape
// class). Each is a TileConfig, DecodeConfig or WgConfig instantiation (attention_hd256.cu,
// attention_hd512.cu, attention_wgmma.cu). Tests run every one of them; the bench times each.
// Variants measured and not chosen were deleted (git history before the kernel-policy commit).
enum class TileKernel : int {
  Hd256Narrow,      // 16 rows, 1x4 warps, 32 keys per tile, 2 stages
  Hd256WideQuad,    // 64 rows, 4x4 warps (16 warps hide more latency), 64 keys per tile
  Hd512Wide,        // 64 rows, 4x2 warps, 32 keys per tile
  // Hopper (sm_90a) only, vision overlay included (attention_wgmma.cuh): wgmma, producer warpgroup + two
  // consumer warpgroups, one product at a time per warpgroup, 64 keys per tile.
  Hd256WgmmaSerial,          // 128 rows (64 per warpgroup), K/V by cp.async
  Hd512WgmmaSerialTmaPair,   // 64 rows, the warpgroups split the head dim, whole valid key tiles by
                             // TMA (boundary tiles: cp.async), in CTA pairs sharing K/V tiles
  Hd256WgmmaPersistent,      // as Hd256WgmmaSerial, one CTA per SM walking the tiles from a queue
  Hd512WgmmaPairPersistent,  // as Hd512WgmmaSerialTmaPair, one cluster per SM pair walking tile pairs
  // Decode kernels with the head dim split over 8 warps (attention_decode.cuh): 16 rows, S's
  // contraction and O's columns split by dims, partial S summed through shared memory.
  Hd512Split8Pair,  // 16 keys per tile, 3 stages (109 KB, two CTAs per SM)
  Hd256Split8,      // 32 keys per tile, 2 stages (86 KB, two CTAs per SM)
};
constexpr int kNumTileKernels = 9;
constexpr bool is_wgmma_kernel(TileKernel k) {
  return int(k) >= int(TileKernel::Hd256WgmmaSerial) && int(k) <= int(TileKernel::Hd512WgmmaPairPersistent);
}
constexpr bool is_split_d_kernel(TileKernel k) { return int(k) >= int(TileKernel::Hd512Split8Pair); }

struct TileKernelInfo {
  const char* name;
  int head_dim;
  int rows;  // packed query rows per CTA
  int keys;  // keys per tile
};
TileKernelInfo tile_kernel_info(TileKernel k);

// Launch geometry: grid (q_tiles, kv_heads · num_splits, num_seqs).
struct TileGrid {
  int q_tiles = 1;
  int kv_heads = 1;
  int num_seqs = 1;
};

// Defined in attention_hd256.cu / attention_hd512.cu for the kernels of their head dim.
void launch_tile_kernel_hd256(TileKernel k, const TileArgs& a, const TileGrid& g, cudaStream_t stream);
void launch_tile_kernel_hd512(TileKernel k, const TileArgs& a, const TileGrid& g, cudaStream_t stream);
// CTAs of the kernel that fit on one SM (for sizing the split-KV grid).
int tile_kernel_occupancy_hd256(TileKernel k);
int tile_kernel_occupancy_hd512(TileKernel k);

// Defined in attention_wgmma.cu. wgmma_supported(): the current device runs the sm_90a kernels.
void launch_wgmma_kernel(TileKernel k, const TileArgs& a, const TileGrid& g, cudaStream_t stream);
bool wgmma_supported();

// Merges the split partials into out (attention_combine.cu).
void launch_combine(int head_dim, const TileArgs& a, cudaStream_t stream);

}  // namespace gs::cuda::attn
