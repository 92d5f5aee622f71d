// What the engine tests read back from a request: its tokens, finish reason and logprobs, and the
// tie-aware comparison of two greedy runs of one request.
#pragma once
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "engine/request.h"

namespace gs {

struct Result {
  std::vector<int> tokens;
  FinishReason finish = FinishReason::None;
  int cached = 0;
  std::vector<TokenLogprob> logprobs, prompt_logprobs;
};

// Greedy continuations of one request from two runs that batch, chunk or cache it differently
// must be equal, with one allowance. The CPU forward is batch-invariant only to f32 rounding
// (batch_invariance_test.cpp) and the tiny random model's distributions are nearly flat, so two
// candidates a few 1e-6 apart in logprob do occur (these tests failed about once in 100 runs
// before this allowance). The runs may part ways at a token where both saw a tie: each run's
// token within kTie of the other's in its own top-2 logprobs; after that the continuations are
// unrelated and are not compared. A wrong page, position or input id moves logprobs by whole
// units. The request must ask for logprobs >= 2 (tie_aware()).
inline constexpr double kTie = 1e-3;

inline Result drain(OutputChannel& ch) {
  Result r;
  while (true) {
    auto out = ch.pop(std::chrono::seconds(60));
    if (!out) {
      ADD_FAILURE() << "no output within 60 s";
      return r;
    }
    r.tokens.insert(r.tokens.end(), out->new_tokens.begin(), out->new_tokens.end());
    r.logprobs.insert(r.logprobs.end(), out->logprobs.begin(), out->logprobs.end());
    if (!out->prompt_logprobs.empty()) r.prompt_logprobs = out->prompt_logprobs;
    r.cached = out->cached_prompt_tokens;
    if (out->finish != FinishReason::None) {
      r.finish = out->finish;
      return r;
    }
  }
}

// Asks for the top-2 logprobs tie_divergence() reads.
inline GenerationRequest tie_aware(GenerationRequest r) {
  r.sampling.logprobs = std::max(r.sampling.logprobs, 2);
  return r;
}

// The index of the first token at which x and y part ways at a tie, or -1 (equal, or not a tie).
inline int tie_divergence(const Result& x, const Result& y) {
  const size_t n = std::min(x.tokens.size(), y.tokens.size());
  for (size_t i = 0; i < n; ++i) {
    if (x.tokens[i] == y.tokens[i]) continue;
    auto near_own = [&](const Result& in, int other) {
      if (i >= in.logprobs.size()) return false;
      for (const auto& [t, l] : in.logprobs[i].top)
        if (t == other) return std::fabs(l - in.logprobs[i].logprob) <= kTie;
      return false;
    };
    return near_own(x, y.tokens[i]) && near_own(y, x.tokens[i]) ? int(i) : -1;
  }
  return -1;
}

inline void expect_same_greedy(const Result& got, const Result& ref, const std::string& id) {
  const int tie = tie_divergence(got, ref);
  if (tie >= 0) {
    std::printf("%s: the runs chose between tied tokens at %d (%d vs %d); compared up to there\n", id.c_str(), tie,
                got.tokens[size_t(tie)], ref.tokens[size_t(tie)]);
    return;
  }
  EXPECT_EQ(got.tokens, ref.tokens) << id;
  EXPECT_EQ(got.finish, ref.finish) << id;
}

}  // namespace gs
