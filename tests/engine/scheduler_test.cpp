// The scheduler, KV manager and prefix cache driven together by a fake model that reads and writes
// K/V through the page tables like the kernels do (fake_kv_model.h): generated tokens must equal
// the reference whatever the batching, chunking, preemption, prefix hits and aborts.
#include "engine/scheduler.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

#include "fake_kv_model.h"

namespace gs {
namespace {

using testing::FakeKvModel;

struct SimRequest {
  std::string id;
  std::vector<int> prompt;
  int max_tokens = 1;
  std::vector<int> mm_block;
};

class Sim {
 public:
  Sim(int P, int W, int sliding_pages, int full_pages, bool prefix, SchedulerConfig sc)
      : pages_{sliding_pages, full_pages},
        kv_(P, W, pages_, prefix),
        sched_(kv_, sc),
        model_(P, W, pages_, /*vocab=*/1000) {}

  void submit(const SimRequest& r) {
    auto s = std::make_unique<Sequence>();
    s->req.id = r.id;
    s->req.prompt = r.prompt;
    s->req.mm_block = r.mm_block;
    s->req.sampling.max_tokens = r.max_tokens;
    s->tokens = r.prompt;
    s->prompt_len = int(r.prompt.size());
    s->pages.cacheable = !s->has_images();
    sched_.add(std::move(s));
    requests_[r.id] = r;
  }

  // One engine step; false when nothing could be scheduled.
  bool step() {
    StepPlan plan = sched_.schedule();
    sched_.check_pages(&plan);
    if (plan.empty()) return false;
    EXPECT_LE(plan.num_tokens, sched_.config().max_num_batched_tokens);
    EXPECT_LE(int(sched_.running().size()), sched_.config().max_num_seqs);
    std::vector<int> next(plan.size());
    for (size_t i = 0; i < plan.size(); ++i) {
      const SequenceStep& c = plan.steps[i];
      Sequence& seq = *plan.seqs[i];
      EXPECT_EQ(c.tokens, &seq.tokens);
      EXPECT_EQ(c.start, seq.num_computed);
      EXPECT_EQ(c.sample, c.end() == int(seq.tokens.size()));
      // A chunk never ends inside an image block.
      int end = c.end();
      if (end < int(seq.tokens.size()) && seq.mm_block(end) >= 0)
        EXPECT_NE(seq.mm_block(end), seq.mm_block(end - 1)) << "image split at " << end;
      next[i] = model_.run_chunk(seq, c.start, c.q_len, kv_.has_group(KvGroup::Full),
                                 kv_.has_group(KvGroup::Sliding));
    }
    sched_.commit(plan);
    for (size_t i = 0; i < plan.size(); ++i) {
      if (!plan.steps[i].sample) continue;
      Sequence* s = plan.seqs[i];
      s->tokens.push_back(next[i]);
      if (s->num_generated() >= s->req.sampling.max_tokens) {
        finished_[s->req.id] = std::vector<int>(s->tokens.begin() + s->prompt_len, s->tokens.end());
        sched_.remove(s);
      }
    }
    return true;
  }

  void abort(std::string id) {  // by value: the caller may pass the id of the sequence we free
    if (Sequence* s = sched_.find(id)) sched_.remove(s);
    aborted_.insert(id);
  }

  void run_to_completion(int max_steps = 100000) {
    while (!sched_.idle()) {
      ASSERT_TRUE(step()) << "scheduler stalled with " << sched_.running().size() << " running, "
                          << sched_.waiting().size() << " waiting";
      ASSERT_GT(--max_steps, 0);
    }
  }

  void expect_reference_outputs() {
    for (const auto& [id, out] : finished_) {
      const SimRequest& r = requests_.at(id);
      EXPECT_EQ(out, model_.reference_tokens(r.prompt, r.max_tokens, kv_.has_group(KvGroup::Full),
                                             kv_.has_group(KvGroup::Sliding)))
          << "request " << id;
    }
  }

  // No sequence holds pages: every used page is only a cached prefix.
  void expect_no_leaks() {
    kv_.check_ownership({}, {});
    kv_.check_invariants();
    for (int g = 0; g < kNumKvGroups; ++g) {
      const PagePool& p = kv_.pool(KvGroup(g));
      EXPECT_EQ(p.num_used(), p.num_evictable()) << "group " << g;
      if (!kv_.prefix_caching()) EXPECT_EQ(p.num_free(), p.num_pages());
    }
  }

  Scheduler& sched() { return sched_; }
  const std::map<std::string, std::vector<int>>& finished() const { return finished_; }
  const std::set<std::string>& aborted() const { return aborted_; }

 private:
  int pages_[2];
  KvManager kv_;
  Scheduler sched_;
  FakeKvModel model_;
  std::map<std::string, SimRequest> requests_;
  std::map<std::string, std::vector<int>> finished_;
  std::set<std::string> aborted_;
};

std::vector<int> random_tokens(std::mt19937& rng, int n) {
  std::vector<int> t(n);
  for (int& x : t) x = int(rng() % 1000);
  return t;
}

SchedulerConfig config(int seqs, int tokens) {
  SchedulerConfig c;
  c.max_num_seqs = seqs;
  c.max_num_batched_tokens = tokens;
  c.max_logit_rows = seqs + 16;
  return c;
}

TEST(Scheduler, OneShotAndChunkedPrefillGiveTheReferenceTokens) {
  std::mt19937 rng(std::random_device{}());
  for (int budget : {4096, 64, 7, 1}) {
    Sim sim(4, 8, 64, 64, false, config(1, budget));
    sim.submit({"a", random_tokens(rng, 37), 12, {}});
    sim.run_to_completion();
    ASSERT_EQ(sim.finished().size(), 1u);
    sim.expect_reference_outputs();
    sim.expect_no_leaks();
  }
}

TEST(Scheduler, OutputOfARequestDoesNotDependOnTheBatch) {
  std::mt19937 rng(std::random_device{}());
  Sim sim(4, 8, 256, 256, false, config(8, 40));
  for (int i = 0; i < 12; ++i)
    sim.submit({"r" + std::to_string(i), random_tokens(rng, 1 + int(rng() % 50)), 1 + int(rng() % 20), {}});
  sim.run_to_completion();
  EXPECT_EQ(sim.finished().size(), 12u);
  sim.expect_reference_outputs();
  sim.expect_no_leaks();
}

TEST(Scheduler, TinyPoolPreemptsAndStillCompletesEveryRequest) {
  std::mt19937 rng(std::random_device{}());
  // Full pool: 20 pages of 4 = 80 tokens, enough for one request of 60 + 20 but not for many.
  Sim sim(4, 8, 12, 20, false, config(6, 32));
  for (int i = 0; i < 8; ++i) sim.submit({"r" + std::to_string(i), random_tokens(rng, 20 + int(rng() % 40)), 20, {}});
  sim.run_to_completion();
  EXPECT_EQ(sim.finished().size(), 8u);
  EXPECT_GT(sim.sched().counters().preemptions, 0u);
  sim.expect_reference_outputs();
  sim.expect_no_leaks();
}

TEST(Scheduler, PrefixCacheHitsGiveTheSameTokensAsAColdRun) {
  std::mt19937 rng(std::random_device{}());
  std::vector<int> system = random_tokens(rng, 45);
  Sim sim(4, 8, 64, 64, true, config(4, 16));
  for (int i = 0; i < 10; ++i) {
    std::vector<int> p = system;
    auto tail = random_tokens(rng, int(rng() % 10));
    p.insert(p.end(), tail.begin(), tail.end());
    sim.submit({"r" + std::to_string(i), p, 1 + int(rng() % 10), {}});
    sim.run_to_completion();  // one after the other, so later ones hit
  }
  EXPECT_GT(sim.sched().counters().prefix_hits, 0u);
  EXPECT_EQ(sim.finished().size(), 10u);
  sim.expect_reference_outputs();
  sim.expect_no_leaks();
}

TEST(Scheduler, ImagesAreNeverSplitAcrossChunks) {
  std::mt19937 rng(std::random_device{}());
  Sim sim(4, 8, 64, 64, true, config(2, 10));
  std::vector<int> prompt = random_tokens(rng, 30);
  std::vector<int> mm(30, -1);
  for (int i = 5; i < 12; ++i) mm[i] = 0;   // 7-token image
  for (int i = 14; i < 24; ++i) mm[i] = 1;  // 10-token image, exactly the budget
  sim.submit({"img", prompt, 5, mm});
  sim.run_to_completion();
  EXPECT_EQ(sim.finished().size(), 1u);
  sim.expect_reference_outputs();
  sim.expect_no_leaks();
}

TEST(Scheduler, AbortFreesPagesImmediately) {
  std::mt19937 rng(std::random_device{}());
  Sim sim(4, 8, 64, 64, false, config(4, 64));
  sim.submit({"a", random_tokens(rng, 30), 50, {}});
  sim.submit({"b", random_tokens(rng, 30), 50, {}});
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(sim.step());
  sim.abort("a");
  sim.abort("b");
  EXPECT_TRUE(sim.sched().idle());
  sim.expect_no_leaks();
}

// Property test: random prompts (often sharing prefixes), budgets, pool sizes, windows, and
// random aborts. Every completed request matches the reference and nothing leaks.
TEST(Scheduler, RandomWorkloadsNeverLeakAndAlwaysMatchTheReference) {
  std::mt19937 rng(std::random_device{}());
  for (int round = 0; round < 30; ++round) {
    int P = 1 + int(rng() % 8), W = 2 + int(rng() % 24);  // W >= 2: the fake model chains through the window
    int max_len = 80, budget = 1 + int(rng() % 48);
    int seqs = 1 + int(rng() % 6);
    budget = std::max(budget, seqs);
    bool has_sliding = rng() % 4 != 0, has_full = !has_sliding || rng() % 4 != 0;
    int full_pages = has_full ? (max_len + P - 1) / P + int(rng() % 40) : 0;
    int sliding_pages = has_sliding ? (W + budget + P - 1) / P + 2 + int(rng() % 30) : 0;
    bool prefix = rng() % 2;
    Sim sim(P, W, sliding_pages, full_pages, prefix, config(seqs, budget));
    std::vector<int> base = random_tokens(rng, 40);
    int n = 1 + int(rng() % 16);
    for (int i = 0; i < n; ++i) {
      int shared = int(rng() % 41);
      std::vector<int> p(base.begin(), base.begin() + shared);
      auto tail = random_tokens(rng, 1 + int(rng() % 30));
      p.insert(p.end(), tail.begin(), tail.end());
      sim.submit({"r" + std::to_string(i), p, 1 + int(rng() % (max_len - int(p.size()))), {}});
    }
    int steps = 0;
    while (!sim.sched().idle()) {
      ASSERT_TRUE(sim.step()) << "stalled in round " << round;
      ASSERT_LT(++steps, 20000);
      if (rng() % 20 == 0) {
        auto& run = sim.sched().running();
        auto& wait = sim.sched().waiting();
        if (!run.empty() && rng() % 2) sim.abort(run[rng() % run.size()]->req.id);
        else if (!wait.empty()) sim.abort(wait[rng() % wait.size()]->req.id);
      }
    }
    EXPECT_EQ(sim.finished().size() + sim.aborted().size(), size_t(n));
    sim.expect_reference_outputs();
    sim.expect_no_leaks();
    if (::testing::Test::HasFailure()) {
      ADD_FAILURE() << "round " << round << ": P=" << P << " W=" << W << " budget=" << budget << " seqs=" << seqs
                    << " pages=" << sliding_pages << "/" << full_pages << " prefix=" << prefix;
      return;
    }
  }
}

}  // namespace
}  // namespace gs
