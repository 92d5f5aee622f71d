// Timing of the vision tower's attention kernel (vision_attention.h) for `gemmaserve bench-kernels`
// and the (disabled) vision attention bench test.
#pragma once
#include <string>
#include <vector>

namespace gs::cuda {

// 280-token images (2520 patch rows each) of both towers (12 heads x 64, 16 heads x 72) at batch
// 1 and 16, on random data in a fused qkv buffer (the tower's layout: q, k and v are strided column
// slices). Medians of `reps` calls timed with CUDA events. `all_tiles`: also time every tile shape
// the kernel can be built with, not only the one vision_attention() chooses.
struct VisionAttentionBenchResult {
  std::string name;
  std::string tile;      // the tile shape ("chosen: ..." for the one vision_attention() runs)
  double ms = 0;         // median time of one call
  double tflops = 0;     // 4·head_dim flops per (query, key) pair of an image, every head
  double tbytes_per_s = 0;  // q, k, v read once and out written once
};
std::vector<VisionAttentionBenchResult> bench_vision_attention(int reps = 20, bool all_tiles = false);

}  // namespace gs::cuda
