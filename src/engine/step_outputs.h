// The two ends of a step between the scheduler and the runner: the sampling half of each scheduled
// SequenceStep (sampling parameters, the sampled row's logit adjustments: bias, min_tokens bans,
// penalties), and the runner's outputs folded back into the sequences (new token, penalty counts,
// log-probabilities, finish rules) and pushed to each request's OutputChannel.
#pragma once
#include <span>
#include <cstdint>
#include <utility>
#include <vector>

#include "engine/scheduler.h"
#include "runner/model_runner.h"

namespace gs {

struct StepOutputs {
  std::vector<int> eos_ids;  // stop unless ignore_eos
  int max_model_len = 0;
  Backend* backend = nullptr;  // holds the repetition penalty's prompt sets (one upload per sequence)
  double forced_accept_rate = 0;  // benchmarks only: each draft also passes with this probability

  // Counters of the last apply().
  int last_generated = 0;
  std::vector<int> accepted;   // drafts accepted by each of the plan's steps (0 unless it verified)
  // Speculative decoding since the start (vLLM's spec_decode counters).
  struct SpecCounters {
    uint64_t rounds = 0, draft_tokens = 0, accepted_tokens = 0;
    std::vector<uint64_t> accepted_per_position;  // [k]: rounds whose draft k+1 was accepted
  } spec;
  int last_prompt_tokens = 0;  // prompts that finished prefill (counted once per request)

  // Fills the sampling fields of the plan's steps; the plan must outlive the runner's launch() of
  // them (the adjustments they point to live here until the next prepare()).
  void prepare(StepPlan& plan);
  struct Finished {
    Sequence* seq;
    RequestOutput last;  // pushed by the engine once the sequence's pages are freed
  };
  // Appends the sampled tokens and pushes one RequestOutput per sampled sequence that goes on.
  // Returns the sequences that finished (stop or length) with their final output, not yet pushed.
  std::vector<Finished> apply(const StepPlan& plan, const std::vector<RunnerOutput>& outs);

  // Why a sequence stops after appending its newest token (None: it goes on).
  FinishReason finish_reason(const Sequence& s) const;
  // Whether the step after the one sampling s's next token may be scheduled before that token is
  // known: the token cannot end s by length, and no penalty needs its count.
  bool can_run_ahead(const Sequence& s) const;
  // The logit adjustments of s's next sampled token (empty when it has none); with `drafts`, of
  // the token after them, as if they had been accepted (a verify's later rows: the drafts count
  // for the penalties and min_tokens as generated tokens would).
  LogitAdjustRow logit_adjustments(Sequence& s, std::span<const int> drafts = {});
  // How many of k drafts s's next step may verify (0: it decodes one token as usual).
  int draft_budget(const Sequence& s, int k) const;
  // Whether s's sampling reads the counts of its generated tokens (penalties).
  static bool needs_counts(const SamplingParams& sp);

 private:
  // Per step of the plan, its sampled rows' adjustments (a verify has 1 + drafts rows), read by
  // the runner during launch().
  std::vector<std::vector<LogitAdjustRow>> adjust_;
};

}  // namespace gs
