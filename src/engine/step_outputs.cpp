#include "engine/step_outputs.h"

#include <algorithm>
#include <unordered_map>

#include "core/error.h"
#include "engine/speculative_verify.h"
#include "ops/sampling_rng.h"

namespace gs {

void StepOutputs::prepare(StepPlan& plan) {
  adjust_.assign(plan.size(), {});
  for (size_t i = 0; i < plan.size(); ++i) {
    Sequence& s = *plan.seqs[i];
    SequenceStep& st = plan.steps[i];
    const SamplingParams& sp = s.req.sampling;
    st.sampling.temperature = sp.temperature;
    st.sampling.top_k = sp.top_k;
    st.sampling.top_p = sp.top_p;
    st.sampling.min_p = sp.min_p;
    st.sampling.seed = s.seed;
    // The step counter is the index of the token being drawn, so a seeded request draws the same
    // tokens whatever else is batched with it, and again after a preemption.
    st.sampling.step = uint64_t(s.num_generated());
    if (st.sample) {
      // A verify's row r samples the token after its first r drafts: adjusted as if they were
      // accepted, which is the only case in which its token is used.
      const std::span<const int> drafts(s.tokens.data() + s.tokens.size() - size_t(st.num_drafts),
                                        size_t(st.num_drafts));
      bool any = false;
      for (int r = 0; r < st.sampled_rows(); ++r) {
        adjust_[i].push_back(logit_adjustments(s, drafts.first(size_t(r))));
        any |= !adjust_[i].back().empty();
      }
      if (any) st.adjust = adjust_[i].data();
    }
    st.logprobs = sp.logprobs;
    if (s.pending_row >= 0) {
      GS_CHECK(st.end() == int(s.tokens.size()), "engine: '{}' runs [{}, {}) before its token {} is known", s.req.id,
               st.start, st.end(), s.tokens.size() - 1);
      st.feedback_row = s.pending_row;
    }
  }
}

bool StepOutputs::needs_counts(const SamplingParams& sp) {
  return sp.presence_penalty != 0.f || sp.frequency_penalty != 0.f || sp.repetition_penalty != 1.f;
}

LogitAdjustRow StepOutputs::logit_adjustments(Sequence& s, std::span<const int> drafts) {
  const SamplingParams& sp = s.req.sampling;
  const int generated = s.num_generated() + int(drafts.size());
  LogitAdjustRow row;
  row.repetition_penalty = sp.repetition_penalty;
  row.presence_penalty = sp.presence_penalty;
  row.frequency_penalty = sp.frequency_penalty;
  std::unordered_map<int, size_t> index;  // token -> its entry: a row names a token once
  auto entry = [&](int token) -> LogitAdjustToken& {
    auto [it, added] = index.try_emplace(token, row.tokens.size());
    if (added) row.tokens.push_back(LogitAdjustToken{token});
    return row.tokens[it->second];
  };
  for (auto [token, bias] : sp.logit_bias) entry(token).bias = bias;
  // min_tokens (vLLM): while fewer tokens than that were generated, no token may end the output. A
  // placeholder of a step in flight counts: it is generated, only not known yet.
  if (generated < sp.min_tokens) {
    if (!sp.ignore_eos)
      for (int t : eos_ids) entry(t).banned = true;
    for (int t : sp.stop_token_ids) entry(t).banned = true;
  }
  const bool repetition = sp.repetition_penalty != 1.f;
  if (needs_counts(sp)) {
    auto count = [&](int token, int n) {
      LogitAdjustToken& e = entry(token);
      e.count += n;
      e.repeated = repetition && !std::binary_search(s.prompt_set_ids.begin(), s.prompt_set_ids.end(), token);
    };
    for (auto [token, n] : s.output_counts) count(token, n);
    for (int token : drafts) count(token, 1);
  }
  if (repetition && !s.prompt_set_ids.empty()) {
    GS_CHECK(backend, "engine: '{}' has a repetition penalty but no backend holds its prompt set", s.req.id);
    // Uploaded at the sequence's first sampled step and kept: the prompt does not change.
    if (!s.prompt_set.defined()) s.prompt_set = backend->upload_token_set(s.prompt_set_ids);
    row.prompt_set = s.prompt_set;
  }
  return row;
}

FinishReason StepOutputs::finish_reason(const Sequence& s) const {
  const int t = s.tokens.back();
  const SamplingParams& sp = s.req.sampling;
  // Before min_tokens only the length limits end the output (a stop token cannot be drawn then,
  // unless every other logit was -inf).
  if (s.num_generated() < sp.min_tokens) {
    if (s.num_generated() >= sp.max_tokens || int(s.tokens.size()) >= max_model_len) return FinishReason::Length;
    return FinishReason::None;
  }
  if (!sp.ignore_eos && std::find(eos_ids.begin(), eos_ids.end(), t) != eos_ids.end()) return FinishReason::Stop;
  if (std::find(sp.stop_token_ids.begin(), sp.stop_token_ids.end(), t) != sp.stop_token_ids.end())
    return FinishReason::Stop;
  if (s.num_generated() >= sp.max_tokens || int(s.tokens.size()) >= max_model_len) return FinishReason::Length;
  return FinishReason::None;
}

int StepOutputs::draft_budget(const Sequence& s, int k) const {
  const SamplingParams& sp = s.req.sampling;
  // Penalties and min_tokens need no exception: each verify row is adjusted as if the drafts
  // before it were accepted (prepare()). A verify of k drafts emits up to k + 1 tokens and writes positions up to tokens.size() - 1 + k.
  return std::max(0, std::min({k, sp.max_tokens - s.num_generated() - 1, max_model_len - int(s.tokens.size())}));
}

bool StepOutputs::can_run_ahead(const Sequence& s) const {
  const SamplingParams& sp = s.req.sampling;
  if (needs_counts(sp)) return false;
  return s.num_generated() + 1 < sp.max_tokens && int(s.tokens.size()) + 1 < max_model_len;
}

std::vector<StepOutputs::Finished> StepOutputs::apply(const StepPlan& plan, const std::vector<RunnerOutput>& outs) {
  GS_CHECK(outs.size() == plan.size(), "engine: {} runner outputs for {} sequence steps", outs.size(), plan.size());
  std::vector<Finished> done;
  accepted.assign(plan.size(), 0);
  last_generated = 0;
  last_prompt_tokens = 0;
  for (size_t i = 0; i < plan.size(); ++i) {
    const SequenceStep& c = plan.steps[i];
    const RunnerOutput& o = outs[i];
    Sequence& s = *plan.seqs[i];
    if (s.state == Sequence::State::Finished) continue;  // ended (aborted, or stopped a step earlier)
    for (int r = 0; r < c.prompt_logprob_rows; ++r) {
      const int p = c.start + r + 1;  // the prompt token this row predicts
      TokenLogprob& lp = s.prompt_logprobs[p];
      lp.token = s.tokens[p];
      lp.logprob = o.prompt_logprobs[r];
      lp.top = o.prompt_top[r];
    }
    if (!c.sample) continue;
    // The emitted tokens: the sampled one, or for a verify the accepted drafts and the target's
    // correction or bonus (speculative_verify.h).
    std::vector<int> emitted = {o.tokens.at(0)};
    if (c.num_drafts > 0) {
      const std::vector<int> drafts(s.tokens.end() - c.num_drafts, s.tokens.end());
      s.tokens.resize(s.tokens.size() - size_t(c.num_drafts));
      s.drafts_in_tokens = 0;
      std::vector<bool> forced(drafts.size(), false);
      if (forced_accept_rate > 0)  // keyed like sampling: (seed, index of the drafted token)
        for (size_t k = 0; k < drafts.size(); ++k)
          forced[k] = rng::uniform(s.seed ^ 0x5bd1e995u, uint64_t(s.num_generated()) + k, 0) < forced_accept_rate;
      DraftVerdict v = verify_drafts_forced(drafts, o.tokens, forced);
      emitted = std::move(v.tokens);
      accepted[i] = v.accepted;
      spec.rounds++;
      spec.draft_tokens += uint64_t(c.num_drafts);
      spec.accepted_tokens += uint64_t(v.accepted);
      if (spec.accepted_per_position.size() < size_t(c.num_drafts)) spec.accepted_per_position.resize(size_t(c.num_drafts));
      for (int k = 0; k < v.accepted; ++k) spec.accepted_per_position[size_t(k)]++;
    }
    RequestOutput out;
    FinishReason finish = FinishReason::None;
    for (size_t j = 0; j < emitted.size() && finish == FinishReason::None; ++j) {
      const int token = emitted[j];
      if (s.pending_row >= 0) {
        s.tokens.back() = token;  // the placeholder the next step was scheduled with
        s.pending_row = -1;
      } else {
        s.tokens.push_back(token);
      }
      s.output_counts[token]++;
      ++last_generated;
      out.new_tokens.push_back(token);
      if (s.req.sampling.logprobs >= 0) out.logprobs.push_back(TokenLogprob{token, o.logprobs[j], o.top[j]});
      finish = finish_reason(s);  // a stop token or the length ends the run: later tokens are dropped
    }
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
    out.finish = finish;
    if (out.finish == FinishReason::None)
      s.req.output->push(std::move(out));
    else
      done.push_back({&s, std::move(out)});
  }
  return done;
}

}  // namespace gs
