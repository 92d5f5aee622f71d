// Bidirectional multi-head attention of the vision tower (gemma4-architecture.md §3.5, §4.2):
// every patch row of an image attends to every row of the same image and to nothing else; the
// images of a step are packed one after another. Scale 1.0 (the tower's q/k norms take its place),
// f32 accumulation with an online softmax on the tensor cores (vision_attention.cu).
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace gs::cuda {

// q, k, v: bf16 row-major [rows, heads·head_dim] views whose rows are q_stride / k_stride /
// v_stride elements apart (column slices of one fused qkv buffer work); out: bf16 contiguous
// [rows, heads·head_dim]. Image i owns rows [cu_rows[i], cu_rows[i+1]) (device i32, num_images + 1
// entries); max_rows bounds every image's row count (the host's copy of cu_rows gives it) and
// sizes the grid. head_dim 64 (E2B/E4B tower) or 72 (26B/31B tower). Strides must be multiples of
// 8 elements and the pointers 16-byte aligned (rows are read in 16-byte pieces). Launches on
// `stream` without synchronising (graph-capturable); bad arguments throw gs::Error naming them.
void vision_attention(const __nv_bfloat16* q, int64_t q_stride, const __nv_bfloat16* k, int64_t k_stride,
                      const __nv_bfloat16* v, int64_t v_stride, __nv_bfloat16* out, const int* cu_rows,
                      int num_images, int max_rows, int heads, int head_dim, cudaStream_t stream);

// Floating-point operations of one call (4·head_dim per (query, key) pair of an image, every
// head), for benchmarks: `h_cu_rows` is the host copy of cu_rows.
double vision_attention_flops(const int* h_cu_rows, int num_images, int heads, int head_dim);

namespace vattn {
// The tile shapes vision_attention() can run (rows of query per warp, keys per tile), for the
// tests and the benchmark to pin one; vision_attention() runs choose_vision_tile()'s.
enum class VisionTile { Rows16Keys64, Rows32Keys32, Rows32Keys64 };
const char* vision_tile_name(VisionTile t);
// The measured winner for the call's shape (vision_attention.cu says what was measured).
VisionTile choose_vision_tile(int num_images, int max_rows, int heads, int head_dim);
void vision_attention_tile(VisionTile tile, const __nv_bfloat16* q, int64_t q_stride, const __nv_bfloat16* k,
                           int64_t k_stride, const __nv_bfloat16* v, int64_t v_stride, __nv_bfloat16* out,
                           const int* cu_rows, int num_images, int max_rows, int heads, int head_dim,
                           cudaStream_t stream);
}  // namespace vattn

}  // namespace gs::cuda
