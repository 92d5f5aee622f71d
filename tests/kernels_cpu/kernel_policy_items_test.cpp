// The kernel policy as text (kernels/kernel_policy_items.h): every key reads back what it writes,
// bad items are refused with a message that says what to type instead, and the developer
// variables land on the same fields. Plain C++: no backend is created.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "core/error.h"
#include "kernels/kernel_policy_items.h"

namespace gs::test {
namespace {

using cuda::KernelPolicy;

// A value other than the default for every key, in the form policy_value writes it.
const std::map<std::string, std::string>& non_defaults() {
  static const std::map<std::string, std::string> values = {
      {"gemv.max_rows", "0"},
      {"gemv.two_row_max_dim", "4096"},
      {"gemv.max_weight_mib", "64"},
      {"gemv.mma_max_rows", "16"},
      {"gemv.mma_max_mib", "0.5"},
      {"gemv.mma_max_k", "8192"},
      {"gemv.mma_fused_max_mib", "0"},
      {"gemv.mma_min_rows", "17"},
      {"gemv.mma_stages", "4"},
      {"gemv.mma_tiles", "2"},
      {"gemv.mma_warps_per_sm", "32"},
      {"gemv.mma_split_min_stages", "2"},
      {"gemv.min_blocks_per_sm", "2"},
      {"gemv.streaming", "false"},
      {"gemv.l2_prefetch_mib", "12.5"},
      {"attention.hd256_decode", "split8"},
      {"attention.hd512_prefill", "pair"},
      {"attention.combine", "separate"},
      {"attention.min_tiles_per_split", "4"},
      {"attention.max_splits", "128"},
      {"attention.narrow_max_rows", "16"},
      {"attention.narrow_max_kv_mib", "2.5"},
      {"attention.tma_qo", "false"},
      {"attention.aligned_key_tiles", "true"},
      {"pdl.mode", "never"},
      {"pdl.max_step_rows", "16"},
      {"sampling.window", "false"},
      {"sampling.team", "8"},
      {"moe.path", "mma64"},
      {"moe.gemv_max_rows", "1024"},
      {"moe.mma64_bn", "64"},
      {"gemm.exact_plans", "true"},
      {"batch_invariant", "true"},
  };
  return values;
}

KernelPolicy with(const std::string& items) {
  KernelPolicy p;
  cuda::apply_policy_items(p, items, "--kernel-policy");
  return p;
}

// The message apply_policy_items throws for `items` ("" when it accepts them).
std::string refusal(const std::string& items) {
  try {
    with(items);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(KernelPolicyItems, EveryKeyHasATestValue) {
  const std::vector<std::string> keys = cuda::policy_keys();
  EXPECT_EQ(keys.size(), non_defaults().size());
  for (const std::string& key : keys) EXPECT_TRUE(non_defaults().count(key)) << key << " has no value in this test";
}

TEST(KernelPolicyItems, DefaultsReadBack) {
  const KernelPolicy defaults;
  std::string items;
  for (const std::string& key : cuda::policy_keys()) items += key + "=" + cuda::policy_value(defaults, key) + ",";
  EXPECT_EQ(cuda::policy_differences(with(items)), "") << items;
  EXPECT_EQ(cuda::policy_value(defaults, "gemv.max_weight_mib"), "unbounded");
  EXPECT_EQ(cuda::policy_value(defaults, "gemv.mma_max_mib"), "20");
  EXPECT_EQ(cuda::policy_value(defaults, "pdl.mode"), "by_step_rows");
}

TEST(KernelPolicyItems, EveryKeyRoundTrips) {
  for (const auto& [key, value] : non_defaults()) {
    const KernelPolicy p = with(key + "=" + value);
    EXPECT_EQ(cuda::policy_value(p, key), value) << key;
    EXPECT_EQ(cuda::policy_differences(p), key + "=" + value) << "only " << key << " changes";
    EXPECT_EQ(cuda::policy_differences(with(cuda::policy_differences(p)), p), "") << key;
  }
}

TEST(KernelPolicyItems, ValuesLandOnTheirFields) {
  const KernelPolicy p = with(
      "gemv.max_weight_mib=64, gemv.mma_max_mib=0.5, gemv.mma_stages=4,gemv.mma_tiles=2,gemv.mma_warps_per_sm=32,"
      "attention.hd256_decode=narrow,attention.hd512_prefill=pair,attention.combine=fused,pdl.mode=always,"
      "moe.path=gemv,gemv.streaming=off,attention.aligned_key_tiles=1");
  EXPECT_EQ(p.gemv.max_weight_bytes, int64_t(64) << 20);
  EXPECT_EQ(p.gemv.mma_max_bytes, int64_t(1) << 19);
  EXPECT_EQ(p.gemv.mma_shape.stages, 4);
  EXPECT_EQ(p.gemv.mma_shape.tiles, 2);
  EXPECT_EQ(p.gemv.mma_shape.warps_per_sm, 32);
  EXPECT_EQ(p.attention.hd256_decode, cuda::Hd256Decode::Narrow);
  EXPECT_EQ(p.attention.hd512_prefill, cuda::Hd512Prefill::Pair);
  EXPECT_EQ(p.attention.combine, cuda::CombineMode::Fused);
  EXPECT_EQ(p.pdl.mode, cuda::PdlMode::Always);
  EXPECT_EQ(p.moe.path, cuda::MoePath::Gemv);
  EXPECT_FALSE(p.gemv.streaming);
  EXPECT_TRUE(p.attention.aligned_key_tiles);
  EXPECT_EQ(with("moe.path=mma16").moe.path, cuda::MoePath::Mma16);
  EXPECT_EQ(with("attention.combine=auto").attention.combine, cuda::CombineMode::Auto);
  EXPECT_EQ(with("gemv.max_weight_mib=8,gemv.max_weight_mib=unbounded").gemv.max_weight_bytes, INT64_MAX);
}

TEST(KernelPolicyItems, EmptyItemsAndSpacesAreIgnored) {
  EXPECT_EQ(cuda::policy_differences(with("")), "");
  EXPECT_EQ(cuda::policy_differences(with(" , ,")), "");
  EXPECT_EQ(cuda::policy_differences(with(" pdl.mode = never ,")), "pdl.mode=never");
}

TEST(KernelPolicyItems, UnknownKeysAreRefusedWithTheList) {
  const std::string m = refusal("attention.combine=separate,gemv.maxrows=0");
  EXPECT_NE(m.find("--kernel-policy: unknown key 'gemv.maxrows'"), std::string::npos) << m;
  for (const std::string& key : cuda::policy_keys()) EXPECT_NE(m.find(key), std::string::npos) << key << ": " << m;
  EXPECT_NE(refusal("combine=fused").find("unknown key 'combine'"), std::string::npos);
  EXPECT_THROW(cuda::policy_value(KernelPolicy{}, "gemv"), Error);
}

TEST(KernelPolicyItems, BadValuesAreRefusedNamingTheItem) {
  const std::map<std::string, std::string> cases = {
      {"gemv.max_rows=17", "gemv.max_rows=17: expected an integer 0-16"},
      {"gemv.max_rows=-1", "expected an integer 0-16"},
      {"gemv.max_rows=two", "expected an integer 0-16"},
      {"gemv.max_rows=", "gemv.max_rows=: expected"},
      {"gemv.mma_stages=5", "expected an integer 2-4"},
      {"gemv.min_blocks_per_sm=0", "expected an integer >= 1"},
      {"gemv.mma_max_k=99999999999", "expected an integer >= 0"},
      {"gemv.mma_max_mib=-1", "expected a size in MiB >= 0"},
      {"gemv.mma_max_mib=unbounded", "expected a size in MiB >= 0"},
      {"gemv.max_weight_mib=lots", "a size in MiB >= 0, or unbounded"},
      {"gemv.l2_prefetch_mib=1e300", "expected a size in MiB"},
      {"gemv.streaming=yes", "expected true or false"},
      {"attention.combine=fuse", "attention.combine=fuse: expected auto, fused or separate"},
      {"attention.max_splits=129", "expected an integer 0-128"},
      {"pdl.mode=on", "expected by_step_rows, always or never"},
      {"sampling.team=3", "expected 0, 1, 2, 4 or 8"},
      {"moe.mma64_bn=96", "expected 64 or 128"},
      {"pdl.mode", "'pdl.mode' is not a key=value item"},
  };
  for (const auto& [items, expected] : cases) {
    const std::string m = refusal(items);
    EXPECT_EQ(m.rfind("--kernel-policy: ", 0), 0u) << items << ": " << m;
    EXPECT_NE(m.find(expected), std::string::npos) << items << ": " << m;
  }
}

TEST(KernelPolicyItems, ARefusalLeavesThePolicyAsItWas) {
  KernelPolicy p;
  EXPECT_THROW(cuda::apply_policy_items(p, "pdl.mode=never,sampling.team=3"), Error);
  EXPECT_EQ(cuda::policy_differences(p), "");
}

// Sets developer variables for one test and removes them afterwards.
class DeveloperEnv : public ::testing::Test {
 protected:
  void set(const char* name, const char* value) {
    ::setenv(name, value, 1);
    names_.push_back(name);
  }
  void TearDown() override {
    for (const char* n : names_) ::unsetenv(n);
  }

 private:
  std::vector<const char*> names_;
};

TEST_F(DeveloperEnv, UnsetOrEmptyLeavesTheDefaults) {
  for (const char* n : {"GS_GEMV_MAX_M", "GS_ATTN_COMBINE", "GS_PDL", "GS_SAMPLE_TEAM", "GS_MOE_PATH"}) ::unsetenv(n);
  set("GS_GEMV_MAX_MB", "");  // empty counts as unset
  EXPECT_EQ(cuda::policy_differences(cuda::apply_developer_env({})), "");
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

// The variables' own spellings of values: GS_PDL=1, GS_ATTN_HD512_PERSISTENT=1, a partial GS_GEMV_MMA.
TEST_F(DeveloperEnv, VariableValuesKeepTheirMeaning) {
  set("GS_PDL", "1");
  set("GS_ATTN_HD512_PERSISTENT", "1");
  set("GS_GEMV_MMA", "2");
  set("GS_SAMPLE_WINDOW", "1");
  const KernelPolicy p = cuda::apply_developer_env({});
  EXPECT_EQ(p.pdl.mode, cuda::PdlMode::Always);
  EXPECT_EQ(p.attention.hd512_prefill, cuda::Hd512Prefill::PairPersistent);
  EXPECT_EQ(cuda::policy_differences(p), "gemv.mma_stages=2,pdl.mode=always");
}

// The environment is applied over what the code or the flag set.
TEST_F(DeveloperEnv, AppliesOverTheGivenPolicy) {
  set("GS_ATTN_COMBINE", "separate");
  const KernelPolicy p = cuda::apply_developer_env(with("attention.combine=fused,pdl.mode=never"));
  EXPECT_EQ(cuda::policy_differences(p), "attention.combine=separate,pdl.mode=never");
}

TEST_F(DeveloperEnv, BadValuesNameTheVariable) {
  set("GS_SAMPLE_TEAM", "3");
  try {
    cuda::apply_developer_env({});
    ADD_FAILURE() << "GS_SAMPLE_TEAM=3 was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("GS_SAMPLE_TEAM=3: sampling.team=3: expected 0, 1, 2, 4 or 8"),
              std::string::npos)
        << e.what();
  }
  ::unsetenv("GS_SAMPLE_TEAM");
  set("GS_GEMV_MMA", "3,1,16,2");
  try {
    cuda::apply_developer_env({});
    ADD_FAILURE() << "four values for GS_GEMV_MMA were accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("GS_GEMV_MMA=3,1,16,2: at most 3"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gs::test
