// --sweep: the same benchmark repeated over values of one load parameter
// (max-concurrency=1,16,64,100 or request-rate=1,4,inf), summarised in one table, one JSON and
// one throughput-vs-latency plot.
#pragma once
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "bench/metrics.h"

namespace gs::bench {

enum class SweepParam { MaxConcurrency, RequestRate };

struct SweepSpec {
  SweepParam param = SweepParam::MaxConcurrency;
  std::vector<double> values;  // request-rate may hold inf
};

// "max-concurrency=1,16,64" | "request-rate=1,2.5,inf"; gs::Error naming the problem otherwise.
SweepSpec parse_sweep(const std::string& text);
const char* sweep_param_name(SweepParam p);

struct SweepPoint {
  double value = 0;
  BenchmarkMetrics metrics;
};

std::string sweep_table(const SweepSpec& spec, const std::vector<SweepPoint>& points);
nlohmann::json sweep_json(const SweepSpec& spec, const std::vector<SweepPoint>& points);
// Output throughput (y) against median TPOT and median E2E latency, one labelled marker per value.
std::string sweep_svg(const SweepSpec& spec, const std::vector<SweepPoint>& points);

}  // namespace gs::bench
