#include "engine/memory_plan.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace gs {
namespace {

constexpr int S = int(KvGroup::Sliding), F = int(KvGroup::Full);

// 31B-like per-token sizes (bf16): sliding 800 KiB, full 80 KiB; W = 1024.
MemoryPlanInput big_model(size_t budget) {
  MemoryPlanInput in;
  in.kv_bytes_per_token[S] = 819200;
  in.kv_bytes_per_token[F] = 81920;
  in.window = 1024;
  in.page_size = 16;
  in.max_model_len = 32768;
  in.max_num_seqs = 64;
  in.max_num_batched_tokens = 2048;
  in.kv_budget_bytes = budget;
  return in;
}

TEST(MemoryPlan, StaysWithinTheBudgetAndHoldsOneMaxLengthRequest) {
  for (size_t gib : {8, 20, 40, 80}) {
    MemoryPlan p = plan_kv_memory(big_model(gib << 30));
    double used = double(p.num_pages[S]) * p.page_bytes[S] + double(p.num_pages[F]) * p.page_bytes[F];
    EXPECT_LE(used, double(gib << 30)) << gib;
    EXPECT_GE(used, 0.98 * double(gib << 30)) << gib;
    EXPECT_GE(p.num_pages[F] * 16, p.max_model_len) << gib;
    EXPECT_GE(p.requests_that_fit(p.max_model_len), 1) << gib;
    EXPECT_NE(p.describe().find("sliding"), std::string::npos);
  }
}

TEST(MemoryPlan, DerivedRatioShrinksAsTheBudgetGrows) {
  // More memory per request means longer requests fit, and a sliding request stays near W tokens.
  // (max_model_len 4096: one request's minimum never overrides the split.)
  double last = 2;
  for (size_t gib : {8, 20, 40, 80}) {
    MemoryPlanInput in = big_model(gib << 30);
    in.max_model_len = 4096;
    MemoryPlan p = plan_kv_memory(in);
    EXPECT_GT(p.swa_full_tokens_ratio, 0);
    EXPECT_LE(p.swa_full_tokens_ratio, 1);
    EXPECT_LE(p.swa_full_tokens_ratio, last) << gib;
    last = p.swa_full_tokens_ratio;
  }
  EXPECT_LT(last, 0.5);
}

TEST(MemoryPlan, ExplicitRatioIsHonoured) {
  MemoryPlanInput in = big_model(size_t(40) << 30);
  in.swa_full_tokens_ratio = 0.25;
  MemoryPlan p = plan_kv_memory(in);
  EXPECT_NEAR(double(p.num_pages[S]) / p.num_pages[F], 0.25, 0.01);
}

TEST(MemoryPlan, GroupWithoutLayersGetsNoPages) {
  MemoryPlanInput in = big_model(size_t(4) << 30);
  in.kv_bytes_per_token[S] = 0;
  MemoryPlan p = plan_kv_memory(in);
  EXPECT_EQ(p.num_pages[S], 0);
  EXPECT_GT(p.num_pages[F], 0);
  EXPECT_EQ(p.pages_per_request(KvGroup::Sliding, 1000), 0);
}

TEST(MemoryPlan, TooSmallBudgetLowersADerivedMaxModelLenOrFailsAnExplicitOne) {
  MemoryPlanInput in = big_model(size_t(4) << 30);
  in.max_model_len = 262144;
  MemoryPlan p = plan_kv_memory(in);  // derived: lowered, with a warning
  EXPECT_LT(p.max_model_len, 262144);
  EXPECT_FALSE(p.warning.empty());
  in.max_model_len_explicit = true;
  EXPECT_THROW(plan_kv_memory(in), Error);
  // Not even one window plus a chunk of the sliding pool fits: a clear error too.
  EXPECT_THROW(plan_kv_memory(big_model(size_t(1) << 30)), Error);
}

TEST(MemoryPlan, SlidingRequestsNeverNeedMoreThanTheirWindow) {
  MemoryPlan p = plan_kv_memory(big_model(size_t(40) << 30));
  EXPECT_EQ(p.pages_per_request(KvGroup::Sliding, 100000), p.pages_per_request(KvGroup::Sliding, 5000));
  EXPECT_EQ(p.pages_per_request(KvGroup::Sliding, 32), 2);
  EXPECT_EQ(p.pages_per_request(KvGroup::Full, 100000), 6250);
}

}  // namespace
}  // namespace gs
