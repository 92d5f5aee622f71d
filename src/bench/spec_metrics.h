// Speculative decoding's mean acceptance length, read from a server's Prometheus /metrics before
// and after a run. Looked for, in this order:
//  - vLLM's counters  vllm:spec_decode_num_accepted_tokens_total and vllm:spec_decode_num_drafts_total
//    (also under the gemmaserve_ prefix: gemmaserve_spec_decode_num_accepted_tokens_total,
//    gemmaserve_spec_decode_num_drafts_total); acceptance length = 1 + accepted / drafts over
//    the run, as `vllm bench serve` reports it;
//  - SGLang's gauge sglang:spec_accept_length (its value after the run).
// A server without these (or without /metrics) gives no value and the metric is omitted.
#pragma once
#include <map>
#include <optional>
#include <string>

namespace gs::bench {

// Sums of every sample of each metric name in Prometheus text (labels summed over).
std::map<std::string, double> parse_prometheus(const std::string& text);

struct SpecSnapshot {
  std::map<std::string, double> values;  // empty: no /metrics
};

std::optional<double> spec_accept_length(const SpecSnapshot& before, const SpecSnapshot& after);

}  // namespace gs::bench
