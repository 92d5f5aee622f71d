// The one check of what the engine accepts: every value range of a GenerationRequest, against the
// engine's limits. Engine::submit runs it on each request; the API layer runs it on every choice of
// a request before it submits any (api/request_preparer.cpp), with the vocabulary narrowed to the
// tokenizer's, and turns a problem into the OpenAI 400 naming the field the client sent. The API
// parser checks only JSON types and shapes.
#pragma once
#include <optional>
#include <string>

#include "engine/request.h"

namespace gs {

// The documented contracts of the OpenAI API (and vLLM's extra fields), docs/api-fields.md.
constexpr float kMaxTemperature = 2;
constexpr float kMaxAbsPenalty = 2;         // presence_penalty, frequency_penalty: [-2, 2]
// vLLM only asks for > 0; above this the penalty is a ban in all but name, and a typo (15 for 1.5)
// deserves a 400 more than a silent ban.
constexpr float kMaxRepetitionPenalty = 10;
constexpr float kMaxLogitBias = 100;        // OpenAI's range, [-100, 100]
constexpr int kMaxTopLogprobs = 20;         // OpenAI's limit on alternatives per token

// What the engine serving a request can hold.
struct RequestLimits {
  int vocab_size = 0;        // token ids are in [0, vocab_size)
  int max_model_len = 0;     // prompt + max_tokens
  int max_image_tokens = 0;  // soft tokens of one image: it must fit in one step (--max-num-batched-tokens)
};

struct RequestProblem {
  // The field, by its name in SamplingParams / GenerationRequest ("temperature", "prompt",
  // "logprobs", "mm_block", ...); the API layer maps it to the name its endpoint uses.
  std::string param;
  std::string detail;        // what is wrong, without the field's name: "must be in [0, 2], got 3"
  std::string message() const { return param + ": " + detail; }
};

// The first problem of `req` (sampling values, then the prompt, then lengths), or nothing.
std::optional<RequestProblem> validate_request(const GenerationRequest& req, const RequestLimits& limits);

}  // namespace gs
