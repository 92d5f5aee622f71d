// The kernel policy's developer variables, its sanitising and its startup description. No GPU
// needed: nothing here launches.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "kernels/cuda/kernel_policy.h"

namespace gs::test {
namespace {

using cuda::KernelPolicy;

// Sets the variables for one test and removes them afterwards.
class DeveloperEnv : public ::testing::Test {
 protected:
  void set(const char* name, const char* value) {
    ::setenv(name, value, 1);
    names_.push_back(name);
  }
  void TearDown() override {
    for (const char* n : names_) ::unsetenv(n);
    cuda::set_kernel_policy({});
  }

 private:
  std::vector<const char*> names_;
};

TEST_F(DeveloperEnv, UnsetLeavesTheDefaults) {
  for (const char* n : {"GS_GEMV_MAX_M", "GS_ATTN_COMBINE", "GS_PDL", "GS_SAMPLE_TEAM", "GS_MOE_PATH"}) ::unsetenv(n);
  set("GS_GEMV_MAX_MB", "");  // empty counts as unset
  const KernelPolicy p = cuda::apply_developer_env({});
  const KernelPolicy d;
  EXPECT_EQ(p.gemv.max_rows, d.gemv.max_rows);
  EXPECT_EQ(p.gemv.max_weight_bytes, d.gemv.max_weight_bytes);
  EXPECT_EQ(p.attention.combine, cuda::CombineMode::Auto);
  EXPECT_EQ(p.pdl.mode, cuda::PdlMode::ByStepRows);
  EXPECT_EQ(p.sampling.team, 0);
  EXPECT_EQ(p.moe.path, cuda::MoePath::Auto);
}

TEST_F(DeveloperEnv, EachVariableSetsItsField) {
  set("GS_GEMV_MAX_M", "1");
  set("GS_GEMV_MAX_MB", "64");
  set("GS_GEMV_MMA", "4,2,32");
  set("GS_GEMV_STREAM", "0");
  set("GS_ATTN_HD256_DECODE", "narrow");
  set("GS_ATTN_HD512_PERSISTENT", "0");
  set("GS_ATTN_COMBINE", "fused");
  set("GS_ATTN_MAX_SPLITS", "16");
  set("GS_ATTN_ALIGNED_TILES", "1");
  set("GS_PDL", "0");
  set("GS_SAMPLE_WINDOW", "0");
  set("GS_MOE_PATH", "mma16");
  set("GS_MOE_MMA64_BN", "64");
  set("GS_GEMM_EXACT_PLANS", "1");
  const KernelPolicy p = cuda::apply_developer_env({});
  EXPECT_EQ(p.gemv.max_rows, 1);
  EXPECT_EQ(p.gemv.max_weight_bytes, int64_t(64) << 20);
  EXPECT_EQ(p.gemv.mma_shape.stages, 4);
  EXPECT_EQ(p.gemv.mma_shape.tiles, 2);
  EXPECT_EQ(p.gemv.mma_shape.warps_per_sm, 32);
  EXPECT_FALSE(p.gemv.streaming);
  EXPECT_EQ(p.attention.hd256_decode, cuda::Hd256Decode::Narrow);
  EXPECT_EQ(p.attention.hd512_prefill, cuda::Hd512Prefill::Pair);
  EXPECT_EQ(p.attention.combine, cuda::CombineMode::Fused);
  EXPECT_EQ(p.attention.max_splits, 16);
  EXPECT_TRUE(p.attention.aligned_key_tiles);
  EXPECT_EQ(p.pdl.mode, cuda::PdlMode::Never);
  EXPECT_FALSE(p.sampling.window);
  EXPECT_EQ(p.moe.path, cuda::MoePath::Mma16);
  EXPECT_EQ(p.moe.mma64_bn, 64);
  EXPECT_TRUE(p.gemm.exact_plans);
}

// Values no kernel is built for are brought back when the policy is installed.
TEST_F(DeveloperEnv, InstallingSanitises) {
  set("GS_GEMV_MAX_M", "99");
  set("GS_GEMV_MMA", "9,3,0");
  set("GS_SAMPLE_TEAM", "3");
  set("GS_MOE_MMA64_BN", "96");
  cuda::set_kernel_policy(cuda::apply_developer_env({}));
  const KernelPolicy& p = cuda::kernel_policy();
  EXPECT_EQ(p.gemv.max_rows, 16);
  EXPECT_EQ(p.gemv.mma_shape.stages, 3);
  EXPECT_EQ(p.gemv.mma_shape.tiles, 1);
  EXPECT_EQ(p.gemv.mma_shape.warps_per_sm, 1);
  EXPECT_EQ(p.sampling.team, 0);
  EXPECT_EQ(p.moe.mma64_bn, 128);
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
