// Prints gs::cuda::bench_attention()'s table. Disabled by default (a benchmark, not a test: it
// asserts nothing about time); run with --gtest_also_run_disabled_tests --gtest_filter='*Bench*'.
#include <gtest/gtest.h>

#include <cstdio>

#include "attention_harness.h"
#include "kernels/cuda/attention.h"

namespace gs::test {
namespace {

TEST(AttentionBench, DISABLED_Table) {
  if (!cuda_device_present()) GTEST_SKIP() << "no CUDA device";
  cudaDeviceProp prop{};
  ASSERT_EQ(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
  std::printf("device: %s, %d SMs\n", prop.name, prop.multiProcessorCount);
  std::printf("%-46s %10s %10s %12s\n", "shape", "ms", "TFLOP/s", "KV TB/s");
  for (const auto& r : cuda::bench_attention()) {
    std::printf("%-46s %10.3f %10.1f %12.2f\n", r.name.c_str(), r.ms, r.tflops, r.kv_tbytes_per_s);
    EXPECT_GT(r.ms, 0.0);
  }
}

}  // namespace
}  // namespace gs::test
