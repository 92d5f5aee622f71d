// Prints gs::cuda::bench_attention()'s table. Disabled by default (a benchmark, not a test: it
// asserts nothing about time); run with --gtest_also_run_disabled_tests --gtest_filter='*Bench*'.
// GS_BENCH_ATTENTION_SHAPES: only the shapes whose name contains it (profiler and A/B runs,
// tools/gpu/profile_attention.sh and ab-bench.sh).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

#include "attention_harness.h"
#include "kernels/cuda/attention.h"
#include "kernels/cuda_bench/attention_bench.h"
#include "kernels/cuda/kernel_policy.h"
#include "kernels/kernel_policy_items.h"

namespace gs::test {
namespace {

TEST(AttentionBench, DISABLED_Table) {
  if (!cuda_device_present()) GTEST_SKIP() << "no CUDA device";
  cudaDeviceProp prop{};
  ASSERT_EQ(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
  std::printf("device: %s, %d SMs\n", prop.name, prop.multiProcessorCount);
  std::printf("%-44s %-44s %6s %9s %9s %9s\n", "shape", "kernel", "splits", "ms", "TFLOP/s", "KV TB/s");
  // No backend is created here: install the policy with the developer variables (GS_ATTN_* A/B
  // runs) as a backend would.
  cuda::set_kernel_policy(cuda::apply_developer_env({}));
  const char* only = std::getenv("GS_BENCH_ATTENTION_SHAPES");
  for (const auto& r : cuda::bench_attention(20, /*all_kernels=*/true, only ? only : "")) {
    std::printf("%-44s %-44s %6d %9.3f %9.1f %9.2f\n", r.name.c_str(), r.kernel.c_str(), r.splits, r.ms, r.tflops,
                r.kv_tbytes_per_s);
    EXPECT_GT(r.ms, 0.0);
  }
  cuda::set_kernel_policy({});
}

}  // namespace
}  // namespace gs::test
