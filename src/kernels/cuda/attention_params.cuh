// What the attention launchers pass to the kernels, and the tile shapes the dispatcher chooses
// from. Kept apart from the kernel templates so the dispatcher compiles without them.
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace gs::cuda::attn {

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
  const int* page_table = nullptr;   // [S, max_pages]
  int max_pages = 0;
  int page_size = 0;
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
};

// Wide tiles (64 packed rows, 8 warps) for prefill and extend; narrow tiles (16 rows, 4 warps)
// when a sequence's rows fit one m16 tile: decode, and verify with small groups.
enum class TileShape { Wide, Narrow };

constexpr int tile_rows(TileShape s) { return s == TileShape::Wide ? 64 : 16; }
constexpr int tile_keys(int head_dim, TileShape s) {
  return s == TileShape::Wide ? (head_dim == 256 ? 64 : 32) : 32;
}

// Launch geometry: grid (q_tiles, kv_heads · num_splits, num_seqs).
struct TileGrid {
  int q_tiles = 1;
  int kv_heads = 1;
  int num_seqs = 1;
};

// Defined per head dim in attention_hd256.cu / attention_hd512.cu.
void launch_tiles_hd256(TileShape shape, const TileArgs& a, const TileGrid& g, cudaStream_t stream);
void launch_tiles_hd512(TileShape shape, const TileArgs& a, const TileGrid& g, cudaStream_t stream);
// CTAs of one tile kernel that fit on one SM (for sizing the split-KV grid).
int tiles_per_sm_hd256(TileShape shape);
int tiles_per_sm_hd512(TileShape shape);

// Merges the split partials into out (attention_combine.cu).
void launch_combine(int head_dim, const TileArgs& a, cudaStream_t stream);

}  // namespace gs::cuda::attn
