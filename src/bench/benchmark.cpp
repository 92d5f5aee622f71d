#include "bench/benchmark.h"

#include "bench/spec_metrics.h"

namespace gs::bench {
namespace {

// The server's Prometheus metrics, or nothing when it has no /metrics (not an error: vLLM and
// SGLang expose it only with some flags).
SpecSnapshot snapshot(const LoadOptions& o) {
  HttpClient client(o.base_url, o.api_key, 10);
  const HttpReply r = client.get("/metrics");
  if (!r.error.empty() || r.status != 200) return {};
  return {parse_prometheus(r.body)};
}

}  // namespace

BenchmarkRun run_benchmark(const LoadOptions& o, const RequestSettings& s, const std::vector<BenchRequest>& dataset,
                           const BenchTokenizer* tok, const GoodputSlo& slo) {
  BenchmarkRun b;
  warm_up(o, s, dataset);
  const SpecSnapshot before = snapshot(o);
  b.run = run_load(o, s, dataset, tok);
  const SpecSnapshot after = snapshot(o);
  b.metrics = compute_metrics(b.run.results, b.run.duration_s, slo);
  b.spec_accept_length = spec_accept_length(before, after);
  return b;
}

}  // namespace gs::bench
