// What a benchmark run leaves behind: the table people read (laid out like vLLM's "Serving
// Benchmark Result"), the per-request JSONL, and the SVG plots of one run.
#pragma once
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "bench/metrics.h"
#include "bench/request_result.h"

namespace gs::bench {

struct RunDescription {
  int max_concurrency = 0;  // 0: unlimited
  double request_rate = 0;  // inf: all at once
  std::optional<double> spec_accept_length;
};

std::string metrics_table(const BenchmarkMetrics& m, const RunDescription& d);

// One JSON object per request: ttft, itl (list), e2el, tpot (null when <= 1 token), prompt and
// output lengths, success and error; times in seconds as vLLM's result JSON keeps them.
std::string requests_jsonl(const std::vector<RequestResult>& results);

// ttft_cdf.svg, tpot_cdf.svg, itl_cdf.svg, e2el_cdf.svg and output_throughput.svg in `dir`.
// Returns the paths written.
std::vector<std::string> write_run_plots(const std::string& dir, const std::vector<RequestResult>& results,
                                         const BenchmarkMetrics& m);

}  // namespace gs::bench
