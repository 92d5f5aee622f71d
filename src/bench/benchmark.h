// One complete benchmark run: the server's /metrics before, the load, /metrics after, and the
// metrics computed from what the client measured.
#pragma once
#include <optional>
#include <vector>

#include "bench/goodput.h"
#include "bench/load_runner.h"
#include "bench/metrics.h"

namespace gs::bench {

struct BenchmarkRun {
  RunOutput run;
  BenchmarkMetrics metrics;
  std::optional<double> spec_accept_length;  // when the server's /metrics has the counters
};

BenchmarkRun run_benchmark(const LoadOptions& o, const RequestSettings& s, const std::vector<BenchRequest>& dataset,
                           const BenchTokenizer* tok, const GoodputSlo& slo);

}  // namespace gs::bench
