// A grouped GEMM for MoE experts (grouped_gemm_mma.cu): rows of a permuted activation matrix are
// grouped by expert, and each group multiplies its expert's weight. Group sizes live on the
// device (counted by a kernel), so the host never waits for them: the grid covers an upper bound
// of row tiles and a tile map built on the device tells each tile its expert (-1: unused tile).
//
//   C[p, :] = A[src(p), :] · B[e(p)]ᵀ     B[e] is [N, K] row-major (the checkpoint's [out, in])
//
// bf16 operands, f32 accumulation on tensor cores (mma.sync m16n8k16, sm_80+), bf16 result.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace gs::cuda {

struct GroupedGemmArgs {
  const void* a;            // bf16 rows of K
  const int* gather;        // null: A row of permuted row p is p; else gather[p] / gather_div
  int gather_div;
  const void* b;            // bf16 [E, N, K]
  void* c;                  // bf16 [rows, N] ([rows, N/2] with gelu_mul)
  const int* group_end;     // [E]: one past the last permuted row of expert e (offsets[e + 1])
  const int* tile_expert;   // [max_tiles]: expert of each row tile, -1 when unused
  const int* tile_row0;     // [max_tiles]: first permuted row of each tile
  int max_tiles;
  int n, k;
};

// Tiles of tile_m = 16 rows (decode: a few rows per expert) or 64 (prefill); the tile map must
// have been built for that size. Requires n % 8 == 0, k % 8 == 0 and 16-byte aligned a, b
// (checked by the caller). With gelu_mul, B is an MoE gate_up ([gate; up], n = 2I) and C is
// [rows, I] = bf16(gelu_tanh(g) · u), computed from the f32 products.
void launch_grouped_gemm_mma(const GroupedGemmArgs& args, int tile_m, bool gelu_mul, cudaStream_t stream);

}  // namespace gs::cuda
