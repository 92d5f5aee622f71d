// Data parallelism (api/replica_router.h): two cpu engine replicas of the same tiny model behind
// one router. Outputs equal one engine's; a repeated prefix returns to the replica that served it
// (and hits its prefix cache); new conversations spread over idle replicas; a busy prefix holder
// gives way to the least-loaded replica; stats are the replicas' sums.
#include "api/replica_router.h"

#include <gtest/gtest.h>

#include <random>

#include "engine_results.h"
#include "tiny_model.h"

namespace gs {
namespace {

using testing::make_tiny_model;
using testing::TinyModel;

EngineOptions options() {
  EngineOptions o;
  o.max_num_seqs = 8;
  o.max_num_batched_tokens = 256;
  o.max_model_len = 256;
  o.page_size = 4;
  o.kv_cache_memory_bytes = 4 << 20;
  return o;
}

GenerationRequest request(const std::string& id, std::vector<int> prompt, int max_tokens) {
  GenerationRequest r;
  r.id = id;
  r.prompt = std::move(prompt);
  r.sampling.temperature = 0;
  r.sampling.max_tokens = max_tokens;
  r.sampling.ignore_eos = true;
  return r;
}

std::vector<int> prompt_of(uint32_t seed, int n) {
  std::mt19937 rng(seed);
  std::vector<int> p(static_cast<size_t>(n));
  for (int& t : p) t = 3 + int(rng() % 500);
  return p;
}

struct Replicas {
  TinyModel a = make_tiny_model(7), b = make_tiny_model(7);  // the same weights (seed) on two backends
  Engine ea{a.model, options()}, eb{b.model, options()};
  api::ReplicaRouter router{{&ea, &eb}, options().page_size, 1};
  Replicas() {
    ea.start();
    eb.start();
  }
  Result run(const GenerationRequest& r) {
    auto ch = r.output;
    auto res = router.submit(r);
    EXPECT_TRUE(res.ok) << res.error;
    return drain(*ch);
  }
};

TEST(ReplicaRouter, OutputsEqualOneEngineAndPrefixesStayOnTheirReplica) {
  Replicas R;
  TinyModel solo = make_tiny_model(7);
  Engine one(solo.model, options());
  one.start();
  const std::vector<int> system = prompt_of(1, 40);
  for (int turn = 0; turn < 3; ++turn) {
    std::vector<int> p = system;
    const std::vector<int> user = prompt_of(100 + uint32_t(turn), 9);
    p.insert(p.end(), user.begin(), user.end());
    const int chosen_before = R.router.choose(p);
    GenerationRequest r = request("t" + std::to_string(turn), p, 6);
    const Result via_router = R.run(r);
    GenerationRequest r1 = request("solo" + std::to_string(turn), p, 6);
    auto ch = r1.output;
    ASSERT_TRUE(one.submit(r1).ok);
    EXPECT_EQ(via_router.tokens, drain(*ch).tokens) << "turn " << turn;
    if (turn > 0) {
      // The shared system prompt went to one replica on turn 0; later turns follow it there and hit.
      EXPECT_EQ(chosen_before, R.router.choose(system)) << "turn " << turn;
      EXPECT_GE(via_router.cached, 36) << "turn " << turn << ": the repeated prefix missed the cache";
    }
  }
  const EngineStats s = R.router.stats(), sa = R.ea.stats(), sb = R.eb.stats();
  EXPECT_EQ(s.prompt_tokens, sa.prompt_tokens + sb.prompt_tokens);
  EXPECT_EQ(s.prefix_hits, sa.prefix_hits + sb.prefix_hits);
  EXPECT_EQ(s.pages_total[0] + s.pages_total[1], sa.pages_total[0] + sa.pages_total[1] + sb.pages_total[0] + sb.pages_total[1]);
  EXPECT_EQ(R.router.limits().max_model_len, R.ea.request_limits().max_model_len);
}

TEST(ReplicaRouter, NewPromptsSpreadAndABusyHolderGivesWay) {
  Replicas R;
  // Two unrelated prompts on an idle server go to different replicas (ties taken in turn).
  const int first = R.router.choose(prompt_of(5, 20));
  R.run(request("x", prompt_of(5, 20), 1));
  const int second = R.router.choose(prompt_of(6, 20));
  EXPECT_NE(first, second);
  // A burst of prompt 5's conversation: the holder takes requests while it carries at most `slack`
  // (1) more than the other replica, then the other one does.
  std::vector<std::shared_ptr<OutputChannel>> burst;
  std::vector<int> went;
  for (int i = 0; i < 3; ++i) {
    GenerationRequest r = request("busy" + std::to_string(i), prompt_of(5, 20), 100);
    burst.push_back(r.output);
    went.push_back(R.router.choose(r.prompt));
    ASSERT_TRUE(R.router.submit(r).ok);
  }
  EXPECT_EQ(went, (std::vector<int>{first, first, 1 - first}));
  for (auto& ch : burst) drain(*ch);
  // Idle again: the replica that served the prefix last (both hold it now) takes it.
  EXPECT_EQ(R.router.choose(prompt_of(5, 20)), 1 - first);
}

TEST(ReplicaRouter, SumsStatsElementWise) {
  EngineStats a, b;
  a.running = 1, b.running = 2, a.waiting = 3, b.waiting = 4, a.page_size = b.page_size = 16;
  a.spec_accepted_per_position = {1, 2};
  b.spec_accepted_per_position = {10, 20, 30};
  const EngineStats s = api::sum_stats({a, b});
  EXPECT_EQ(s.running, 3);
  EXPECT_EQ(s.waiting, 7);
  EXPECT_EQ(s.page_size, 16);
  EXPECT_EQ(s.spec_accepted_per_position, (std::vector<uint64_t>{11, 22, 30}));
}

}  // namespace
}  // namespace gs
