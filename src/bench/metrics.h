// The benchmark's metrics, defined exactly as vLLM's `vllm bench serve` defines them
// (vllm/benchmarks/serve.py, calculate_metrics), so that a run of ours and a run of theirs can
// be put side by side:
//  - only successful requests count toward tokens and latencies; failed ones add 0 output tokens;
//  - TPOT of a request = (e2e - ttft) / (output_tokens - 1), only when output_tokens > 1; for
//    goodput a request with <= 1 output token has TPOT 0;
//  - ITL = every gap between consecutive text chunks of every request, pooled;
//  - peak output throughput = the most chunks that arrived in any 1-second bucket counted from
//    the earliest request start (each chunk counted as one token, as vLLM does);
//  - throughputs are totals over the benchmark's wall-clock duration.
// Input token throughput (SGLang's bench_serving prints it; vLLM does not) is total input / duration.
#pragma once
#include <nlohmann/json.hpp>

#include <optional>
#include <vector>

#include "bench/goodput.h"
#include "bench/request_result.h"
#include "bench/stats.h"

namespace gs::bench {

struct PeakThroughput {
  double max_output_tokens_per_s = 0;
  int max_concurrent_requests = 0;
  std::vector<double> tokens_per_second;  // the buckets, for the throughput-over-time plot
};

// vLLM's 1-second buckets: chunk times are start + ttft + cumulative itl; bucket
// int(t - earliest_start); ceil(last_end - earliest_start) + 1 buckets. A request counts as
// concurrent in every bucket from int(start) to int(end), inclusive.
PeakThroughput peak_throughput(const std::vector<RequestResult>& results);

// TPOT of one request in seconds, or nothing when it produced <= 1 token.
std::optional<double> request_tpot(const RequestResult& r);

struct BenchmarkMetrics {
  int completed = 0;
  int failed = 0;
  double duration_s = 0;
  long long total_input = 0;
  long long total_output = 0;
  double request_throughput = 0;
  double request_goodput = 0;  // good requests / duration (only meaningful when slo.any())
  int good_requests = 0;
  double input_throughput = 0;
  double output_throughput = 0;
  double total_token_throughput = 0;
  PeakThroughput peak;
  // Distributions in milliseconds.
  Distribution ttft_ms, tpot_ms, itl_ms, e2el_ms;
  GoodputSlo slo;
};

BenchmarkMetrics compute_metrics(const std::vector<RequestResult>& results, double duration_s,
                                 const GoodputSlo& slo);

// Every metric under vLLM's result-JSON names (mean_ttft_ms, p99_itl_ms, ...).
nlohmann::json metrics_json(const BenchmarkMetrics& m);

}  // namespace gs::bench
