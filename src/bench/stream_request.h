// One benchmark request: send it streaming and time what comes back, with the conventions of
// vLLM's benchmark clients (vllm/benchmarks/lib/endpoint_request_func.py,
// async_request_openai_completions / _chat_completions) and SGLang's bench_serving.py:
//  - A token chunk is one that reports a generation step: a completions choice with a "text"
//    field, or a chat delta with "content" / "reasoning_content" / "tool_calls", even when the
//    text is "" (servers send "" for tokens that show no text yet: a held-back byte sequence, a
//    skipped special token; vLLM's client counts those chunks too). Not token chunks: usage-only
//    chunks (no choices), a chat finish-only chunk (empty delta) and the chat role announcement
//    ({"role":"assistant","content":""}), which some servers send before any token exists.
//  - TTFT: from sending to the first token chunk.
//  - ITL: one gap per token chunk after the first. A chunk that carries several tokens
//    (speculative decoding) still gives ONE gap, not one per token: this is vLLM's convention for
//    the OpenAI endpoints (SGLang splits the gap evenly over the tokens only for its native
//    /generate backend). A server that sends one chunk per token gives completion_tokens - 1 gaps.
//  - E2E latency: from sending to the last token chunk (vLLM: most_recent_timestamp - st).
//  - Output tokens: usage.completion_tokens when the server sends a usage chunk
//    (stream_options.include_usage, which every request asks for); otherwise the caller counts
//    tokens of the generated text (vLLM: len(tokenizer(text, add_special_tokens=False))).
#pragma once
#include <nlohmann/json.hpp>

#include <chrono>
#include <string>

#include "bench/dataset.h"
#include "bench/http_client.h"
#include "bench/request_result.h"

namespace gs::bench {

enum class ApiEndpoint { Completions, ChatCompletions };
ApiEndpoint parse_api_endpoint(const std::string& path);  // "/v1/completions" | "/v1/chat/completions"
const char* endpoint_path(ApiEndpoint e);

struct RequestSettings {
  ApiEndpoint endpoint = ApiEndpoint::Completions;
  std::string model;
  double temperature = 0;  // vLLM's benchmark sends 0
  bool ignore_eos = false;
  nlohmann::json extra_body = nlohmann::json::object();  // merged last, top-level keys win
};

// The JSON body for `req` (exposed for tests).
nlohmann::json request_body(const RequestSettings& s, const BenchRequest& req);

using Clock = std::chrono::steady_clock;

// Sends `req` and returns what was measured; never throws for server or network failures (they
// become success=false with the reason in `error`). start_time is measured from `run_start`.
RequestResult run_stream_request(HttpClient& client, const RequestSettings& s, const BenchRequest& req,
                                 Clock::time_point run_start);

// Applies the payloads of one response to `r`, as run_stream_request does while they arrive;
// `t` is seconds since the request was sent. Exposed so tests can feed synthetic streams.
class StreamTimer {
 public:
  explicit StreamTimer(ApiEndpoint e) : endpoint_(e) {}
  void on_payload(const std::string& payload, double t, RequestResult& r);
  bool done() const { return done_; }
  bool any_tokens() const { return chunks_ > 0; }

 private:
  ApiEndpoint endpoint_;
  double last_ = 0;
  int chunks_ = 0;
  bool done_ = false;
};

}  // namespace gs::bench
