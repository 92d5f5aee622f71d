// The engine honours logit_bias, min_tokens and repetition_penalty: each test shows the parameter
// changing the generated tokens of a tiny random model on the cpu backend, against a reference
// computed on the host from the model's own logits.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <map>
#include <random>
#include <set>

#include "engine/engine.h"
#include "runner/sequence_runner.h"
#include "tiny_model.h"

namespace gs {
namespace {

using testing::make_tiny_model;
using testing::TinyModel;

constexpr int kVocab = 512;  // tiny_model.h

struct Outcome {
  std::vector<int> tokens;
  FinishReason finish = FinishReason::None;
};

EngineOptions options(bool overlap) {
  EngineOptions o;
  o.max_num_seqs = 4;
  o.max_num_batched_tokens = 128;
  o.max_model_len = 128;
  o.page_size = 4;
  o.kv_cache_memory_bytes = 4 << 20;
  o.debug_page_checks = true;
  o.disable_overlap_schedule = !overlap;
  return o;
}

GenerationRequest greedy(std::vector<int> prompt, int max_tokens) {
  GenerationRequest r;
  r.id = "r";
  r.prompt = std::move(prompt);
  r.sampling.temperature = 0;
  r.sampling.max_tokens = max_tokens;
  r.sampling.ignore_eos = true;
  return r;
}

Outcome run(const TinyModel& m, const GenerationRequest& req, bool overlap = true) {
  Engine engine(m.model, options(overlap));
  engine.start();
  GenerationRequest r = req;
  r.output = std::make_shared<OutputChannel>();
  auto res = engine.submit(r);
  EXPECT_TRUE(res.ok) << res.error;
  Outcome out;
  while (res.ok) {
    auto o = r.output->pop(std::chrono::seconds(60));
    if (!o) {
      ADD_FAILURE() << "no output within 60 s";
      break;
    }
    out.tokens.insert(out.tokens.end(), o->new_tokens.begin(), o->new_tokens.end());
    if (o->finish != FinishReason::None) {
      out.finish = o->finish;
      break;
    }
  }
  return out;
}

std::vector<int> prompt_of(unsigned seed, int n) {
  std::mt19937 rng(seed);
  std::vector<int> p(static_cast<size_t>(n));
  for (int& t : p) t = 3 + int(rng() % 100);  // a narrow range: a repetitive prompt
  return p;
}

TEST(SamplingParams, LogitBiasForcesAToken) {
  TinyModel m = make_tiny_model(31);
  GenerationRequest r = greedy(prompt_of(1, 20), 6);
  const Outcome free_run = run(m, r);
  const int forced = free_run.tokens[0] == 77 ? 78 : 77;
  r.sampling.logit_bias = {{forced, 100.f}};
  for (bool overlap : {false, true}) {
    const Outcome biased = run(m, r, overlap);
    EXPECT_EQ(biased.tokens, std::vector<int>(6, forced)) << "overlap " << overlap;
  }
  // -100 bans: the free run's first token never comes first.
  r.sampling.logit_bias = {{free_run.tokens[0], -100.f}};
  EXPECT_NE(run(m, r).tokens[0], free_run.tokens[0]);
}

// A stop token forced by logit_bias still leaves at least min_tokens tokens, then stops the output.
TEST(SamplingParams, MinTokensHoldsBackStopTokensAndEos) {
  TinyModel m = make_tiny_model(32);
  for (bool overlap : {false, true}) {
    GenerationRequest r = greedy(prompt_of(2, 16), 12);
    const int stop = 40;
    r.sampling.stop_token_ids = {stop};
    r.sampling.logit_bias = {{stop, 100.f}};
    Outcome without = run(m, r, overlap);
    EXPECT_EQ(without.tokens, std::vector<int>{stop});
    EXPECT_EQ(without.finish, FinishReason::Stop);

    r.sampling.min_tokens = 5;
    Outcome with = run(m, r, overlap);
    ASSERT_EQ(with.tokens.size(), 6u) << "overlap " << overlap;
    for (int i = 0; i < 5; ++i) EXPECT_NE(with.tokens[size_t(i)], stop) << "token " << i;
    EXPECT_EQ(with.tokens[5], stop);
    EXPECT_EQ(with.finish, FinishReason::Stop);

    // The model's EOS (id 1) the same way, unless ignore_eos.
    r.sampling.stop_token_ids.clear();
    r.sampling.logit_bias = {{1, 100.f}};
    r.sampling.ignore_eos = false;
    with = run(m, r, overlap);
    ASSERT_EQ(with.tokens.size(), 6u);
    EXPECT_EQ(with.tokens[5], 1);
    EXPECT_EQ(with.finish, FinishReason::Stop);
  }
}

// The greedy continuation under a repetition penalty, computed from the model's logits on the host.
std::vector<int> penalized_greedy(Gemma4Model& model, const std::vector<int>& prompt, int n, float p) {
  std::vector<int> seq = prompt;
  std::set<int> seen(prompt.begin(), prompt.end());
  SequenceRunOptions opt;
  opt.page_size = 8;
  for (int i = 0; i < n; ++i) {
    std::vector<float> l = sequence_logits(model, seq, opt);
    const float* row = l.data() + (seq.size() - 1) * size_t(kVocab);
    int best = -1;
    float best_v = -FLT_MAX;
    for (int v = 0; v < kVocab; ++v) {
      float x = row[v];
      if (seen.count(v)) x = x > 0 ? x / p : x * p;
      if (best < 0 || x > best_v) best = v, best_v = x;
    }
    seq.push_back(best);
    seen.insert(best);
  }
  return std::vector<int>(seq.begin() + long(prompt.size()), seq.end());
}

TEST(SamplingParams, RepetitionPenaltyChangesGreedyOutputOverPromptAndOutput) {
  TinyModel m = make_tiny_model(33);
  const std::vector<int> prompt = prompt_of(3, 60);
  const int n = 8;
  GenerationRequest r = greedy(prompt, n);
  const Outcome free_run = run(m, r);
  r.sampling.repetition_penalty = 3.f;
  const std::vector<int> want = penalized_greedy(*m.model, prompt, n, 3.f);
  ASSERT_NE(want, free_run.tokens) << "the penalty must change this prompt's greedy output for the test to mean anything";
  for (bool overlap : {false, true}) EXPECT_EQ(run(m, r, overlap).tokens, want) << "overlap " << overlap;
}

TEST(SamplingParams, EngineRefusesOutOfRangeValues) {
  TinyModel m = make_tiny_model(34);
  Engine engine(m.model, options(true));
  GenerationRequest r = greedy({5, 6}, 4);
  r.sampling.repetition_penalty = 0.f;
  EXPECT_EQ(engine.submit(r).http_status, 400);
  r = greedy({5, 6}, 4);
  r.sampling.min_tokens = 5;
  EXPECT_EQ(engine.submit(r).http_status, 400);
  r = greedy({5, 6}, 4);
  r.sampling.logit_bias = {{kVocab, 1.f}};
  EXPECT_EQ(engine.submit(r).http_status, 400);
}

}  // namespace
}  // namespace gs
