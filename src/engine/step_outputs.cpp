#include "engine/step_outputs.h"

#include <algorithm>

#include "core/error.h"

namespace gs {

std::vector<RunnerSeq> StepOutputs::runner_inputs(const StepPlan& plan) {
  std::vector<RunnerSeq> rs;
  counts_.assign(plan.chunks.size(), {});
  for (size_t i = 0; i < plan.chunks.size(); ++i) {
    const ScheduledChunk& c = plan.chunks[i];
    Sequence& s = *c.seq;
    const SamplingParams& sp = s.req.sampling;
    RunnerSeq r;
    r.tokens = &s.tokens;
    r.start = c.start;
    r.q_len = c.q_len;
    for (int g = 0; g < kNumKvGroups; ++g)
      r.page_table[g] = s.pages.table[g].empty() ? nullptr : &s.pages.table[g];
    r.mm_block = s.req.mm_block.empty() ? nullptr : &s.req.mm_block;
    r.sample = c.samples;
    r.sampling.temperature = sp.temperature;
    r.sampling.top_k = sp.top_k;
    r.sampling.top_p = sp.top_p;
    r.sampling.min_p = sp.min_p;
    r.sampling.seed = s.seed;
    // The step counter is the index of the token being drawn, so a seeded request draws the same
    // tokens whatever else is batched with it, and again after a preemption.
    r.sampling.step = uint64_t(s.num_generated());
    r.presence_penalty = sp.presence_penalty;
    r.frequency_penalty = sp.frequency_penalty;
    if (c.samples && (sp.presence_penalty != 0.f || sp.frequency_penalty != 0.f)) {
      counts_[i].assign(s.output_counts.begin(), s.output_counts.end());
      r.token_counts = &counts_[i];
    }
    r.logprobs = sp.logprobs;
    r.prompt_logprob_rows = c.prompt_logprob_rows;
    if (s.pending_row >= 0) {
      GS_CHECK(c.start + c.q_len == int(s.tokens.size()), "engine: '{}' runs [{}, {}) before its token {} is known",
               s.req.id, c.start, c.start + c.q_len, s.tokens.size() - 1);
      r.feedback_row = s.pending_row;
    }
    rs.push_back(r);
  }
  return rs;
}

FinishReason StepOutputs::finish_reason(const Sequence& s) const {
  const int t = s.tokens.back();
  const SamplingParams& sp = s.req.sampling;
  if (!sp.ignore_eos && std::find(eos_ids.begin(), eos_ids.end(), t) != eos_ids.end()) return FinishReason::Stop;
  if (std::find(sp.stop_token_ids.begin(), sp.stop_token_ids.end(), t) != sp.stop_token_ids.end())
    return FinishReason::Stop;
  if (s.num_generated() >= sp.max_tokens || int(s.tokens.size()) >= max_model_len) return FinishReason::Length;
  return FinishReason::None;
}

bool StepOutputs::can_run_ahead(const Sequence& s) const {
  const SamplingParams& sp = s.req.sampling;
  if (sp.presence_penalty != 0.f || sp.frequency_penalty != 0.f) return false;
  return s.num_generated() + 1 < sp.max_tokens && int(s.tokens.size()) + 1 < max_model_len;
}

std::vector<StepOutputs::Finished> StepOutputs::apply(const StepPlan& plan, const std::vector<RunnerOutput>& outs) {
  GS_CHECK(outs.size() == plan.chunks.size(), "engine: {} runner outputs for {} chunks", outs.size(),
           plan.chunks.size());
  std::vector<Finished> done;
  last_generated = 0;
  last_prompt_tokens = 0;
  for (size_t i = 0; i < plan.chunks.size(); ++i) {
    const ScheduledChunk& c = plan.chunks[i];
    const RunnerOutput& o = outs[i];
    Sequence& s = *c.seq;
    if (s.state == Sequence::State::Finished) continue;  // ended (aborted, or stopped a step earlier)
    for (int r = 0; r < c.prompt_logprob_rows; ++r) {
      const int p = c.start + r + 1;  // the prompt token this row predicts
      TokenLogprob& lp = s.prompt_logprobs[p];
      lp.token = s.tokens[p];
      lp.logprob = o.prompt_logprobs[r];
      lp.top = o.prompt_top[r];
    }
    if (!c.samples) continue;
    if (s.pending_row >= 0) {
      s.tokens.back() = o.token;  // the placeholder the next step was scheduled with
      s.pending_row = -1;
    } else {
      s.tokens.push_back(o.token);
    }
    s.output_counts[o.token]++;
    ++last_generated;

    RequestOutput out;
    out.new_tokens = {o.token};
    if (s.req.sampling.logprobs >= 0) out.logprobs.push_back(TokenLogprob{o.token, o.logprob, o.top});
    if (!s.first_output_sent) {
      s.first_output_sent = true;
      last_prompt_tokens += s.prompt_len;
      if (s.req.sampling.prompt_logprobs) {
        s.prompt_logprobs[0].token = s.tokens[0];  // nothing precedes it: logprob 0, no alternatives
        out.prompt_logprobs = s.prompt_logprobs;
      }
    }
    out.prompt_tokens = s.prompt_len;
    out.cached_prompt_tokens = s.cached_prompt_tokens;
    out.completion_tokens = s.num_generated();
    out.finish = finish_reason(s);
    if (out.finish == FinishReason::None)
      s.req.output->push(std::move(out));
    else
      done.push_back({&s, std::move(out)});
  }
  return done;
}

}  // namespace gs
