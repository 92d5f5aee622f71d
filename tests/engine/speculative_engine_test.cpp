// Speculative decoding in the serving loop, on the cpu backend with the target + assistant pairs of
// fixtures/draft_golden: greedy output with the drafter equals greedy output without it, request
// by request, with chunked prefill, prefix hits, preemption, stop tokens and length limits in the
// mix, penalties and min_tokens inside verified runs; rounds are counted under vLLM's names, and
// every page comes back.
#include <gtest/gtest.h>

#include "speculative_pairs.h"

namespace gs {
namespace {

struct Case {
  std::string pair;
  int max_num_seqs, batched_tokens, k;
  size_t kv_bytes;
  DraftConvention convention = DraftConvention::Transformers;
};

class SpeculativeEngine : public testing::TestWithParam<Case> {};

TEST_P(SpeculativeEngine, GreedyOutputIsTheSameWithAndWithoutDrafts) {
  const Case& c = GetParam();
  Pair p = load_pair(c.pair, c.convention);
  const Workload w = make_workload(24, 11);
  const EngineOptions plain = options(c.max_num_seqs, c.batched_tokens, c.kv_bytes);
  const DraftedRuns r = run_with_and_without_drafter(p, w, plain, c.k);
  const EngineStats& stats = r.stats;
  for (const auto& [id, ref] : r.plain) expect_same_greedy(r.drafted.at(id), ref, c.pair + " " + id);
  // Rounds happened and were counted under vLLM's rules: per position, acceptance only falls.
  EXPECT_GT(stats.spec_drafts, 0u);
  EXPECT_GE(stats.spec_draft_tokens, stats.spec_drafts);
  EXPECT_LE(stats.spec_accepted_tokens, stats.spec_draft_tokens);
  uint64_t per_position = 0;
  for (size_t k = 0; k < stats.spec_accepted_per_position.size(); ++k) {
    per_position += stats.spec_accepted_per_position[k];
    if (k > 0) EXPECT_LE(stats.spec_accepted_per_position[k], stats.spec_accepted_per_position[k - 1]);
  }
  EXPECT_EQ(per_position, stats.spec_accepted_tokens);
  std::printf("%s: %llu rounds, %llu drafts, %llu accepted, %llu preemptions\n", c.pair.c_str(),
              (unsigned long long)stats.spec_drafts, (unsigned long long)stats.spec_draft_tokens,
              (unsigned long long)stats.spec_accepted_tokens, (unsigned long long)stats.preemptions);
}

TEST(SpeculativeEngineScripted, AcceptedRunsKeepGreedyOutputExact) {
  Pair p = load_pair("e2b_like");
  Workload w = make_workload(24, 5);
  {
    // Stop tokens that fall inside accepted runs: every fourth request stops at its third token.
    const auto first = run(p, w, options(8, 64, 0));
    for (size_t i = 1; i < w.requests.size(); i += 4) {
      const std::vector<int>& t = first.at(w.requests[i].id).tokens;
      if (t.size() >= 3) w.requests[i].sampling.stop_token_ids = {t[2]};
    }
  }
  for (auto [batched, kv] : {std::pair<int, size_t>{64, 0}, {12, 1536 * 1024}}) {
    SCOPED_TRACE("batched tokens " + std::to_string(batched) + ", kv bytes " + std::to_string(kv));
    const EngineOptions plain = options(8, batched, kv);
    EngineStats plain_stats;
    const auto want = run(p, w, plain, &plain_stats);
    int stopped = 0;
    for (const auto& [id, r] : want) stopped += r.finish == FinishReason::Stop;
    EXPECT_GT(stopped, 0) << "no request ends on a stop token";
    for (int wrong_every : {1000000, 5, 2}) {
      SCOPED_TRACE("one draft in " + std::to_string(wrong_every) + " wrong");
      EngineStats stats;
      const auto source = run_scripted_exact(p, w, plain, want, 4, wrong_every, &stats);
      EXPECT_GT(source->calls, 0);
      EXPECT_GT(stats.spec_accepted_tokens, stats.spec_draft_tokens / 4) << "the script's drafts are mostly right";
      // Right drafts are rejected only past a stop token (the script drafts filler there).
      if (wrong_every > 100) EXPECT_GT(stats.spec_accepted_tokens, stats.spec_draft_tokens * 3 / 4);
      // With every draft right, fewer steps: accepted runs emit several tokens a step. (With many
      // wrong, verify chunks spend the token budget that prefill would use, and can take more.)
      if (wrong_every > 100) EXPECT_LT(stats.steps, plain_stats.steps);
      if (kv) EXPECT_GT(stats.preemptions + plain_stats.preemptions, 0u) << "the small pool should preempt";
    }
  }
}

// Penalties and min_tokens inside verified runs: each verify row is adjusted as if the drafts
// before it were accepted (their counts, one more generated token each), so greedy output with
// scripted, mostly right drafts equals greedy output without drafts, and every request drafts.
TEST(SpeculativeEngineScripted, PenaltiesAndMinTokensInsideAcceptedRuns) {
  Pair p = load_pair("e2b_like");
  Workload w = make_workload(20, 9);
  const auto unpenalized = run(p, w, options(8, 64, 0));
  for (size_t i = 0; i < w.requests.size(); ++i) {
    SamplingParams& sp = w.requests[i].sampling;
    sp.max_tokens = std::max(sp.max_tokens, 8);
    switch (i % 4) {
      case 0: sp.presence_penalty = 1.5f; break;
      case 1: sp.frequency_penalty = 0.7f, sp.repetition_penalty = 1.4f; break;
      case 2: {
        // A stop token the unpenalized run draws second, banned for the first 5 tokens.
        const std::vector<int>& t = unpenalized.at(w.requests[i].id).tokens;
        if (t.size() >= 2) sp.stop_token_ids = {t[1]};
        sp.min_tokens = 5;
        sp.ignore_eos = false;
        break;
      }
      default: sp.repetition_penalty = 0.8f, sp.min_tokens = 3; break;
    }
  }
  const EngineOptions plain = options(8, 64, 0);
  const auto want = run(p, w, plain);
  int changed = 0;
  for (const auto& [id, r] : want) changed += r.tokens != unpenalized.at(id).tokens;
  EXPECT_GT(changed, int(w.requests.size()) / 2) << "the penalties should change most outputs";
  for (int wrong_every : {1000000, 3}) {
    SCOPED_TRACE("one draft in " + std::to_string(wrong_every) + " wrong");
    EngineStats stats;
    run_scripted_exact(p, w, plain, want, 4, wrong_every, &stats);
    // Every request has a penalty or min_tokens: drafts were verified for them.
    EXPECT_GT(stats.spec_drafts, w.requests.size());
    if (wrong_every > 100) EXPECT_GT(stats.spec_accepted_tokens, stats.spec_draft_tokens * 3 / 4);
  }
}

// --speculative-disable-by-batch-size: no drafting while more sequences than N run. Outputs stay
// exact; with N = 2 and 8 requests at once, fewer rounds draft than with no limit, steps overlap
// while drafting is paused, and drafting resumes once the batch has shrunk (the last requests
// still draft).
TEST(SpeculativeEngineScripted, NoDraftsAboveTheBatchSizeLimit) {
  Pair p = load_pair("dense");
  Workload w = make_workload(8, 21);
  // Six short requests and two long ones: once the short ones end, the long two run alone for
  // dozens of tokens whatever order the requests arrived in, and must draft then.
  for (size_t i = 0; i < w.requests.size(); ++i) {
    GenerationRequest& r = w.requests[i];
    r.prompt.resize(std::min<size_t>(r.prompt.size(), 40));
    r.sampling.max_tokens = i < 2 ? 64 : 8 + int(i);
    r.sampling.ignore_eos = true;
  }
  const EngineOptions plain = options(8, 256, 0);
  const auto want = run(p, w, plain);
  EngineStats unlimited, limited;
  for (int limit : {0, 2}) {
    EngineOptions spec = plain;
    spec.speculative.disable_by_batch_size = limit;
    run_scripted_exact(p, w, spec, want, 3, 1000000, limit ? &limited : &unlimited);
  }
  EXPECT_GT(limited.spec_drafts, 0u) << "the last requests, alone, should draft";
  EXPECT_LT(limited.spec_drafts, unlimited.spec_drafts);
  EXPECT_GT(limited.steps, unlimited.steps) << "without drafts the busy phase takes a step a token";
  // While drafting is paused, steps overlap as without a drafter; never while drafting.
  EXPECT_GT(limited.overlapped_steps, 0u);
  EXPECT_EQ(unlimited.overlapped_steps, 0u);
  // The MTP drafter through the same transitions, with chunked prefill and preemption (a small KV
  // pool and token budget): output still exact.
  const EngineOptions small = options(6, 12, 1536 * 1024);
  const auto want_small = run(p, w, small);
  EngineOptions spec = small;
  spec.speculative.drafter = p.drafter;
  spec.speculative.num_speculative_tokens = 3;
  spec.speculative.disable_by_batch_size = 3;
  EngineStats stats;
  const auto got = run(p, w, spec, &stats);
  for (const auto& [id, ref] : want_small) expect_same_greedy(got.at(id), ref, id);
  EXPECT_GT(stats.spec_drafts, 0u);
}

// The benchmark switch: at rate a every draft passes with probability a, so the mean acceptance
// length of K drafts approaches 1 + a + ... + a^K (shorter where max_tokens cuts rounds); lengths
// and pages stay right.
TEST(SpeculativeEngineForced, AcceptRateSetsTheAcceptanceLength) {
  Pair p = load_pair("dense");
  Workload w = make_workload(16, 3);
  for (GenerationRequest& r : w.requests) {
    r.sampling.max_tokens = 40;
    r.sampling.ignore_eos = true;
  }
  for (double rate : {1.0, 0.8}) {
    EngineOptions o = options(8, 64, 0);
    o.max_model_len = 128;
    o.speculative.drafter = p.drafter;
    o.speculative.num_speculative_tokens = 3;
    o.speculative.forced_accept_rate = rate;
    EngineStats stats;
    const auto got = run(p, w, o, &stats);
    for (const auto& [id, r] : got) {
      EXPECT_EQ(r.tokens.size(), 40u) << id;
      EXPECT_EQ(r.finish, FinishReason::Length) << id;
    }
    ASSERT_GT(stats.spec_drafts, 0u);
    const double length = 1.0 + double(stats.spec_accepted_tokens) / double(stats.spec_drafts);
    const double want = 1 + rate + rate * rate + rate * rate * rate;
    std::printf("rate %.2f: accept length %.2f (ideal %.2f)\n", rate, length, want);
    if (rate == 1.0) EXPECT_EQ(stats.spec_accepted_tokens, stats.spec_draft_tokens);
    EXPECT_NEAR(length, want, 0.35);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Pairs, SpeculativeEngine,
    testing::Values(Case{"dense", 8, 64, 3, 0}, Case{"e2b_like", 8, 64, 4, 0}, Case{"k_eq_v", 4, 16, 2, 0},
                    // Batch 1: one request at a time.
                    Case{"e2b_like", 1, 64, 3, 0},
                    Case{"moe", 8, 64, 3, 0},
                    // Small budgets and pools: chunked prefill, verifies cut short, preemption.
                    Case{"dense", 6, 12, 3, 1536 * 1024},
                    // vLLM's drafting position (one before the newest token, the ordinary window).
                    Case{"e2b_like", 8, 64, 3, 0, DraftConvention::Vllm},
                    Case{"dense", 6, 12, 3, 1536 * 1024, DraftConvention::Vllm}),
    [](const auto& info) {
      return info.param.pair + "_" + std::to_string(info.param.batched_tokens) + "_k" + std::to_string(info.param.k) +
             (info.param.kv_bytes ? "_small_kv" : "") + (info.param.max_num_seqs == 1 ? "_batch1" : "") +
             (info.param.convention == DraftConvention::Vllm ? "_vllm" : "");
    });

}  // namespace
}  // namespace gs
