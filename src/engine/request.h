// What the API layer hands the engine, and what flows back. The engine knows token ids only:
// text, templates and stop strings are the API layer's business.
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "vision/prepared_image.h"

namespace gs {

struct SamplingParams {
  float temperature = 1.f;   // 0: greedy
  int top_k = 0;             // 0: off
  float top_p = 1.f;
  float min_p = 0.f;
  std::optional<uint64_t> seed;
  float presence_penalty = 0.f;
  float frequency_penalty = 0.f;
  float repetition_penalty = 1.f;   // > 0; over prompt and output tokens; 1: off
  std::vector<std::pair<int, float>> logit_bias;  // (token, added to its logit), distinct tokens
  int max_tokens = 256;      // new tokens
  int min_tokens = 0;        // until this many are generated, EOS and stop tokens cannot be drawn
  bool ignore_eos = false;
  std::vector<int> stop_token_ids;  // besides the model's EOS ids (unless ignore_eos)
  int logprobs = -1;         // -1: none; 0: chosen token only; n: plus top-n
  bool prompt_logprobs = false;  // logprobs of the prompt tokens (completions `echo`)
};

enum class FinishReason { None, Stop, Length, Abort, Error };
const char* finish_reason_name(FinishReason r);  // "stop", "length", "abort", "error"

struct TokenLogprob {
  int token = 0;
  float logprob = 0.f;
  std::vector<std::pair<int, float>> top;  // top-n alternatives
};

// One message from the engine to the request's owner.
struct RequestOutput {
  std::vector<int> new_tokens;
  std::vector<TokenLogprob> logprobs;      // one per new token when asked
  std::vector<TokenLogprob> prompt_logprobs;  // once, with the first output, when asked
  FinishReason finish = FinishReason::None;
  std::string error;                       // when finish == Error
  int prompt_tokens = 0;
  int cached_prompt_tokens = 0;            // served from the prefix cache
  int completion_tokens = 0;               // total so far
};

// A thread-safe queue from the engine thread to the request's consumer (HTTP handler).
class OutputChannel {
 public:
  void push(RequestOutput out);
  // Waits up to `timeout`; nullopt on timeout.
  std::optional<RequestOutput> pop(std::chrono::milliseconds timeout);
  // True once an output with finish != None was pushed (it may still be queued).
  bool finished() const;

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<RequestOutput> q_;
  bool finished_ = false;
};

struct GenerationRequest {
  std::string id;                 // unique; used for abort
  std::vector<int> prompt;
  SamplingParams sampling;
  std::vector<int> mm_block;      // optional per-prompt-token vision block ids (-1: text)
  // The images behind the vision blocks: block id b is images[b]'s soft tokens.
  std::vector<PreparedImagePtr> images;
  std::shared_ptr<OutputChannel> output = std::make_shared<OutputChannel>();
  std::chrono::steady_clock::time_point arrival = std::chrono::steady_clock::now();
};

}  // namespace gs
