#include "server/server_metrics.h"

#include <fmt/format.h>

namespace gs::server {

namespace {

void metric(std::string& out, const char* name, const char* type, const char* help) {
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

}  // namespace

ServerMetrics::ServerMetrics()
    : ttft_({0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80}),
      itl_({0.0005, 0.001, 0.0025, 0.005, 0.01, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4,
            0.5, 0.75, 1, 2.5}) {
  for (const char* r : {"stop", "length", "tool_calls", "abort", "error"}) finished_by_reason_[r] = 0;
}

void ServerMetrics::on_first_token(double seconds) { ttft_.observe(seconds); }

void ServerMetrics::on_inter_token(double seconds, int tokens) {
  // Tokens that arrive together (one engine step emitting several) share the gap evenly.
  if (tokens > 0) itl_.observe(seconds / tokens, tokens);
}

void ServerMetrics::on_choice_finished(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  ++finished_by_reason_[reason];
}

void ServerMetrics::on_request_finished(const api::Usage& usage) {
  ++requests_finished_;
  cached_prompt_tokens_ += static_cast<uint64_t>(usage.cached_tokens);
}

void ServerMetrics::on_http_error(int status) {
  std::lock_guard<std::mutex> lock(mu_);
  ++http_errors_[status];
}

std::string ServerMetrics::render(const EngineStats& s) const {
  std::string out;
  metric(out, "gemmaserve_server_draining", "gauge",
         "1 while the server shuts down gracefully: it finishes running and queued requests and refuses new ones.");
  out += fmt::format("gemmaserve_server_draining {}\n", draining_.load() ? 1 : 0);
  metric(out, "gemmaserve_requests_running", "gauge", "Requests in the engine's running batch.");
  out += fmt::format("gemmaserve_requests_running {}\n", s.running);
  metric(out, "gemmaserve_requests_waiting", "gauge", "Requests queued in the engine, not yet running.");
  out += fmt::format("gemmaserve_requests_waiting {}\n", s.waiting);

  const char* pools[kNumKvGroups] = {"sliding", "full"};
  metric(out, "gemmaserve_kv_pages_used", "gauge", "KV cache pages held by requests, per pool.");
  for (int g = 0; g < kNumKvGroups; ++g) out += fmt::format("gemmaserve_kv_pages_used{{pool=\"{}\"}} {}\n", pools[g], s.pages_used[g]);
  metric(out, "gemmaserve_kv_pages_cached", "gauge",
         "KV cache pages held by no request but kept for prefix-cache hits (reused first when pages run out), per pool.");
  for (int g = 0; g < kNumKvGroups; ++g) out += fmt::format("gemmaserve_kv_pages_cached{{pool=\"{}\"}} {}\n", pools[g], s.pages_cached[g]);
  metric(out, "gemmaserve_kv_pages_peak", "gauge", "Most KV cache pages held by requests at once since start, per pool.");
  for (int g = 0; g < kNumKvGroups; ++g) out += fmt::format("gemmaserve_kv_pages_peak{{pool=\"{}\"}} {}\n", pools[g], s.pages_peak[g]);
  metric(out, "gemmaserve_kv_pages_total", "gauge", "KV cache pages in each pool.");
  for (int g = 0; g < kNumKvGroups; ++g) out += fmt::format("gemmaserve_kv_pages_total{{pool=\"{}\"}} {}\n", pools[g], s.pages_total[g]);
  metric(out, "gemmaserve_kv_page_size_tokens", "gauge", "Tokens per KV page.");
  out += fmt::format("gemmaserve_kv_page_size_tokens {}\n", s.page_size);

  metric(out, "gemmaserve_prefix_cache_queries_total", "counter", "Prompt tokens looked up in the prefix cache.");
  out += fmt::format("gemmaserve_prefix_cache_queries_total {}\n", s.prefix_queries);
  metric(out, "gemmaserve_prefix_cache_hits_total", "counter", "Prompt tokens served from the prefix cache.");
  out += fmt::format("gemmaserve_prefix_cache_hits_total {}\n", s.prefix_hits);
  metric(out, "gemmaserve_prefix_cache_hit_rate", "gauge", "Prefix cache hits over queries since start (0 before any query).");
  out += fmt::format("gemmaserve_prefix_cache_hit_rate {}\n",
                     prom_number(s.prefix_queries ? static_cast<double>(s.prefix_hits) / s.prefix_queries : 0.0));

  metric(out, "gemmaserve_prompt_tokens_total", "counter", "Prompt tokens processed (prefilled or served from cache).");
  out += fmt::format("gemmaserve_prompt_tokens_total {}\n", s.prompt_tokens);
  metric(out, "gemmaserve_generation_tokens_total", "counter", "Tokens generated.");
  out += fmt::format("gemmaserve_generation_tokens_total {}\n", s.generation_tokens);
  metric(out, "gemmaserve_preemptions_total", "counter", "Requests preempted (to be recomputed) for lack of KV pages.");
  out += fmt::format("gemmaserve_preemptions_total {}\n", s.preemptions);
  metric(out, "gemmaserve_engine_steps_total", "counter", "Engine steps run.");
  out += fmt::format("gemmaserve_engine_steps_total {}\n", s.steps);
  const char* kinds[2] = {"decode", "prefill"};
  metric(out, "gemmaserve_engine_steps_by_kind_total", "counter",
         "Engine steps by kind (prefill: a step with a prompt chunk of more than one token).");
  for (int k = 0; k < 2; ++k)
    out += fmt::format("gemmaserve_engine_steps_by_kind_total{{kind=\"{}\"}} {}\n", kinds[k], s.steps_of_kind[k]);
  metric(out, "gemmaserve_engine_step_seconds_total", "counter",
         "Time of engine steps by kind, from launch (or the previous step's results) to results.");
  for (int k = 0; k < 2; ++k)
    out += fmt::format("gemmaserve_engine_step_seconds_total{{kind=\"{}\"}} {:.6f}\n", kinds[k], s.step_seconds[k]);
  metric(out, "gemmaserve_engine_overlapped_steps_total", "counter",
         "Engine steps launched while the step before them still ran on the device.");
  out += fmt::format("gemmaserve_engine_overlapped_steps_total {}\n", s.overlapped_steps);
  metric(out, "gemmaserve_discarded_tokens_total", "counter",
         "Tokens computed ahead for requests that had just finished (the cost of overlapped scheduling).");
  out += fmt::format("gemmaserve_discarded_tokens_total {}\n", s.discarded_tokens);
  // Speculative decoding, under vLLM's names (bench reads them for the mean acceptance length).
  metric(out, "vllm:spec_decode_num_drafts_total", "counter", "Speculative rounds verified (one per sequence per step).");
  out += fmt::format("vllm:spec_decode_num_drafts_total {}\n", s.spec_drafts);
  metric(out, "vllm:spec_decode_num_draft_tokens_total", "counter", "Draft tokens verified.");
  out += fmt::format("vllm:spec_decode_num_draft_tokens_total {}\n", s.spec_draft_tokens);
  metric(out, "vllm:spec_decode_num_accepted_tokens_total", "counter", "Draft tokens accepted.");
  out += fmt::format("vllm:spec_decode_num_accepted_tokens_total {}\n", s.spec_accepted_tokens);
  metric(out, "vllm:spec_decode_num_accepted_tokens_per_pos", "counter",
         "Rounds that accepted the draft at each position (0: the first draft).");
  for (size_t k = 0; k < s.spec_accepted_per_position.size(); ++k)
    out += fmt::format("vllm:spec_decode_num_accepted_tokens_per_pos{{position=\"{}\"}} {}\n", k,
                       s.spec_accepted_per_position[k]);

  ttft_.render(out, "gemmaserve_time_to_first_token_seconds", "Time from request arrival to its first token.");
  itl_.render(out, "gemmaserve_inter_token_latency_seconds", "Time between consecutive tokens of a request.");

  std::lock_guard<std::mutex> lock(mu_);
  metric(out, "gemmaserve_request_success_total", "counter",
         "Choices finished, by finish reason (abort: the client went away, or the server stopped the request at "
         "shutdown; error: the engine failed it).");
  for (const auto& [reason, n] : finished_by_reason_) {
    out += fmt::format("gemmaserve_request_success_total{{finished_reason=\"{}\"}} {}\n", reason, n);
  }
  metric(out, "gemmaserve_requests_finished_total", "counter", "API requests that ran to the end (all choices).");
  out += fmt::format("gemmaserve_requests_finished_total {}\n", requests_finished_.load());
  metric(out, "gemmaserve_cached_prompt_tokens_total", "counter", "Prompt tokens reported to clients as cached.");
  out += fmt::format("gemmaserve_cached_prompt_tokens_total {}\n", cached_prompt_tokens_.load());
  metric(out, "gemmaserve_http_errors_total", "counter", "HTTP requests answered with an error, by status.");
  for (const auto& [status, n] : http_errors_) out += fmt::format("gemmaserve_http_errors_total{{status=\"{}\"}} {}\n", status, n);
  return out;
}

}  // namespace gs::server
