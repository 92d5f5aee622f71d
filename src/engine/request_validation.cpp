#include "engine/request_validation.h"

#include <cstdint>

#include <fmt/format.h>

#include "runner/model_runner.h"

namespace gs {

// The runner sizes its top-logprob buffers for this many alternatives per row.
static_assert(ModelRunner::kMaxTopLogprobs >= kMaxTopLogprobs, "the runner cannot report the top logprobs allowed");

namespace {

std::optional<RequestProblem> problem(const char* param, std::string detail) {
  return RequestProblem{param, std::move(detail)};
}

// Written so that NaN is outside every range.
bool in_closed(float x, float lo, float hi) { return x >= lo && x <= hi; }

std::optional<RequestProblem> check_sampling(const SamplingParams& sp, int vocab) {
  if (!in_closed(sp.temperature, 0, kMaxTemperature))
    return problem("temperature",
                   fmt::format("must be in [0, {}] (0: greedy), got {}", kMaxTemperature, sp.temperature));
  if (!(sp.top_p > 0 && sp.top_p <= 1)) return problem("top_p", fmt::format("must be in (0, 1], got {}", sp.top_p));
  if (sp.top_k < 0) return problem("top_k", fmt::format("must be 0 (off) or positive, got {}", sp.top_k));
  if (!in_closed(sp.min_p, 0, 1)) return problem("min_p", fmt::format("must be in [0, 1], got {}", sp.min_p));
  if (!in_closed(sp.presence_penalty, -kMaxAbsPenalty, kMaxAbsPenalty))
    return problem("presence_penalty",
                   fmt::format("must be in [-{0}, {0}], got {1}", kMaxAbsPenalty, sp.presence_penalty));
  if (!in_closed(sp.frequency_penalty, -kMaxAbsPenalty, kMaxAbsPenalty))
    return problem("frequency_penalty",
                   fmt::format("must be in [-{0}, {0}], got {1}", kMaxAbsPenalty, sp.frequency_penalty));
  if (!(sp.repetition_penalty > 0 && sp.repetition_penalty <= kMaxRepetitionPenalty))
    return problem("repetition_penalty",
                   fmt::format("must be in (0, {}] (1: off), got {}", kMaxRepetitionPenalty, sp.repetition_penalty));
  for (auto [t, bias] : sp.logit_bias) {
    if (t < 0 || t >= vocab)
      return problem("logit_bias", fmt::format("token id {} is outside the vocabulary [0, {})", t, vocab));
    if (!in_closed(bias, -kMaxLogitBias, kMaxLogitBias))
      return problem("logit_bias",
                     fmt::format("the bias of token {0} must be in [-{1}, {1}], got {2}", t, kMaxLogitBias, bias));
  }
  for (int t : sp.stop_token_ids)
    if (t < 0 || t >= vocab)
      return problem("stop_token_ids", fmt::format("token id {} is outside the vocabulary [0, {})", t, vocab));
  if (sp.logprobs > kMaxTopLogprobs)
    return problem("logprobs", fmt::format("must be at most {}, got {}", kMaxTopLogprobs, sp.logprobs));
  if (sp.logprobs < -1) return problem("logprobs", fmt::format("must be -1 (none) or at least 0, got {}", sp.logprobs));
  if (sp.min_tokens < 0) return problem("min_tokens", fmt::format("must be >= 0, got {}", sp.min_tokens));
  return std::nullopt;
}

std::optional<RequestProblem> check_prompt(const GenerationRequest& req, const RequestLimits& limits) {
  if (req.prompt.empty()) return problem("prompt", "is empty (no tokens)");
  for (size_t i = 0; i < req.prompt.size(); ++i)
    if (req.prompt[i] < 0 || req.prompt[i] >= limits.vocab_size)
      return problem("prompt", fmt::format("token id {} at position {} is outside the vocabulary [0, {})",
                                           req.prompt[i], i, limits.vocab_size));
  if (!req.mm_block.empty() && req.mm_block.size() != req.prompt.size())
    return problem("mm_block",
                   fmt::format("has {} entries for {} prompt tokens", req.mm_block.size(), req.prompt.size()));
  // An image's soft tokens are one run of equal block ids; it is prefilled in one step.
  for (size_t i = 0, run = 0; i < req.mm_block.size(); ++i) {
    run = (req.mm_block[i] >= 0 && i > 0 && req.mm_block[i] == req.mm_block[i - 1]) ? run + 1 : 1;
    if (req.mm_block[i] >= 0 && int64_t(run) > limits.max_image_tokens)
      return problem("mm_block", fmt::format("an image of more than {} soft tokens does not fit in one step "
                                             "(--max-num-batched-tokens)", limits.max_image_tokens));
  }
  return std::nullopt;
}

// Prompt, max_tokens and min_tokens against the model length. The prompt comes first: a request
// that left max_tokens out gets what the length leaves after the prompt, which is nothing when the
// prompt alone is too long.
std::optional<RequestProblem> check_lengths(const GenerationRequest& req, int max_model_len) {
  const int64_t len = int64_t(req.prompt.size());
  const SamplingParams& sp = req.sampling;
  if (len >= max_model_len)
    return problem("prompt", fmt::format("the prompt is {} tokens but the maximum model length is {} tokens "
                                         "(the prompt plus at least one new token must fit)", len, max_model_len));
  if (sp.max_tokens < 1) return problem("max_tokens", fmt::format("must be at least 1, got {}", sp.max_tokens));
  if (len + sp.max_tokens > max_model_len)
    return problem("max_tokens", fmt::format("the prompt is {} tokens and {} new ones are asked for, together more "
                                             "than the maximum model length of {} tokens", len, sp.max_tokens,
                                             max_model_len));
  if (sp.min_tokens > sp.max_tokens)
    return problem("min_tokens", fmt::format("{} is more than max_tokens ({})", sp.min_tokens, sp.max_tokens));
  return std::nullopt;
}

}  // namespace

std::optional<RequestProblem> validate_request(const GenerationRequest& req, const RequestLimits& limits) {
  if (auto p = check_sampling(req.sampling, limits.vocab_size)) return p;
  if (auto p = check_prompt(req, limits)) return p;
  return check_lengths(req, limits.max_model_len);
}

}  // namespace gs
