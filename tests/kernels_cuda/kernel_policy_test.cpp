// The installed kernel policy's sanitising and its startup description. No GPU needed: nothing
// here launches. (The policy's items and developer variables: tests/kernels_cpu.)
#include <gtest/gtest.h>

#include <string>

#include "kernels/cuda/kernel_policy.h"

namespace gs::test {
namespace {

using cuda::KernelPolicy;

// Values no kernel is built for, set in code, are brought back when the policy is installed (the
// items refuse them before they get here).
TEST(KernelPolicyInstall, Sanitises) {
  KernelPolicy set;
  set.gemv.max_rows = 99;
  set.gemv.mma_shape = {9, 3, 0, 7};
  set.sampling.team = 3;
  set.moe.mma64_bn = 96;
  cuda::set_kernel_policy(set);
  const KernelPolicy& p = cuda::kernel_policy();
  EXPECT_EQ(p.gemv.max_rows, 16);
  EXPECT_EQ(p.gemv.mma_shape.stages, 3);
  EXPECT_EQ(p.gemv.mma_shape.tiles, 1);
  EXPECT_EQ(p.gemv.mma_shape.warps_per_sm, 1);
  EXPECT_EQ(p.gemv.mma_shape.split_min_stages, 4);
  EXPECT_EQ(p.sampling.team, 0);
  EXPECT_EQ(p.moe.mma64_bn, 128);
  cuda::set_kernel_policy({});
}

TEST(KernelPolicyDescribe, NamesEveryArea) {
  const std::string d = KernelPolicy{}.describe();
  EXPECT_EQ(d.rfind("kernels: ", 0), 0u) << d;
  for (const char* area : {"\n  gemv: ", "\n  attention: ", "\n  pdl: ", "\n  sampling: ", "\n  moe: ", "\n  gemm: "})
    EXPECT_NE(d.find(area), std::string::npos) << area << " missing from\n" << d;
  KernelPolicy p;
  p.attention.combine = cuda::CombineMode::Fused;
  EXPECT_NE(p.describe().find("fused"), std::string::npos);
}

}  // namespace
}  // namespace gs::test
