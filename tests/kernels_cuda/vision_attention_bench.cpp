// Prints gs::cuda::bench_vision_attention()'s table with every tile shape. Disabled by default (a
// benchmark, not a test); run with --gtest_also_run_disabled_tests --gtest_filter='*VisionAttentionBench*'.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cstdio>

#include "kernels/cuda_bench/vision_attention_bench.h"

namespace gs::test {
namespace {

TEST(VisionAttentionBench, DISABLED_Table) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) GTEST_SKIP() << "no CUDA device";
  cudaDeviceProp prop{};
  ASSERT_EQ(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
  std::printf("device: %s, %d SMs\n", prop.name, prop.multiProcessorCount);
  std::printf("%-40s %-40s %9s %9s %9s\n", "shape", "tile", "ms", "TFLOP/s", "TB/s");
  for (const auto& r : cuda::bench_vision_attention(20, /*all_tiles=*/true)) {
    std::printf("%-40s %-40s %9.4f %9.1f %9.3f\n", r.name.c_str(), r.tile.c_str(), r.ms, r.tflops, r.tbytes_per_s);
    EXPECT_GT(r.ms, 0.0);
  }
}

}  // namespace
}  // namespace gs::test
