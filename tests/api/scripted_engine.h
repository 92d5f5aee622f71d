// An EngineClient for API tests: every submitted request "generates" a scripted token sequence
// at once (one RequestOutput per token), honouring max_tokens, stop ids and logprobs, so tests
// know exactly what the API layer receives. Records submissions and aborts.
#pragma once
#include <functional>
#include <mutex>
#include <set>
#include <vector>

#include "api/engine_client.h"

namespace gs::testing {

class ScriptedEngine : public api::EngineClient {
 public:
  // The tokens a request would produce if nothing stopped it.
  std::function<std::vector<int>(const GenerationRequest&)> script = [](const GenerationRequest&) {
    return std::vector<int>{};
  };
  int max_len = 4096;
  int queue_limit = 1 << 30;  // submissions beyond this many are refused with 429
  Engine::SubmitResult refusal;  // with an error: every submission is refused with it (a 400 of validate_request...)
  int cached_tokens = 0;
  // How a request whose script runs out before max_tokens ends: Stop (the model's EOS), or Error /
  // Abort with `end_error`, as the engine ends requests it fails or stops (shutdown).
  FinishReason end_with = FinishReason::Stop;
  std::string end_error;

  Engine::SubmitResult submit(GenerationRequest req) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (static_cast<int>(submitted.size()) >= queue_limit) return {false, 429, "too many requests queued", ""};
    if (!refusal.error.empty()) return refusal;
    submitted.push_back(req);
    std::vector<int> toks = script(req);
    const SamplingParams& s = req.sampling;
    int n = 0;
    for (size_t i = 0; i < toks.size() || n < s.max_tokens; ++i) {
      RequestOutput o;
      o.prompt_tokens = static_cast<int>(req.prompt.size());
      o.cached_prompt_tokens = cached_tokens;
      if (i >= toks.size()) {  // script ran out before max_tokens: the model "stopped" (or see end_with)
        o.finish = end_with;
        o.error = end_error;
        o.completion_tokens = n;
        req.output->push(o);
        return {true, 200, "", ""};
      }
      int t = toks[i];
      o.new_tokens = {t};
      ++n;
      o.completion_tokens = n;
      if (s.logprobs >= 0) {
        TokenLogprob lp{t, -0.5f * n, {}};
        for (int k = 0; k < s.logprobs; ++k) lp.top.push_back({t + k, -0.5f * n - k});
        o.logprobs.push_back(lp);
      }
      bool stop = !s.ignore_eos && std::find(s.stop_token_ids.begin(), s.stop_token_ids.end(), t) != s.stop_token_ids.end();
      if (stop) o.finish = FinishReason::Stop;
      else if (n >= s.max_tokens) o.finish = FinishReason::Length;
      req.output->push(o);
      if (o.finish != FinishReason::None) break;
    }
    return {true, 200, "", ""};
  }
  void abort(const std::string& id) override {
    std::lock_guard<std::mutex> lock(mu_);
    aborted.insert(id);
  }
  EngineStats stats() const override { return {}; }
  // Any id is the engine's: the API layer narrows the vocabulary to its tokenizer's.
  RequestLimits limits() const override { return {INT32_MAX, max_len, 2048}; }

  std::vector<GenerationRequest> submitted;
  std::set<std::string> aborted;

 private:
  std::mutex mu_;
};

}  // namespace gs::testing
