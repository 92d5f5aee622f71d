#include "bench/metrics.h"

#include <algorithm>
#include <cmath>

namespace gs::bench {

std::optional<double> request_tpot(const RequestResult& r) {
  if (!r.success || r.output_tokens <= 1) return std::nullopt;
  return (r.latency - r.ttft) / static_cast<double>(r.output_tokens - 1);
}

PeakThroughput peak_throughput(const std::vector<RequestResult>& results) {
  PeakThroughput p;
  double min_start = 0, max_end = 0;
  bool any = false;
  for (const auto& r : results) {
    if (!r.success) continue;
    min_start = any ? std::min(min_start, r.start_time) : r.start_time;
    max_end = any ? std::max(max_end, r.start_time + r.latency) : r.start_time + r.latency;
    any = true;
  }
  if (!any) return p;
  const size_t buckets = static_cast<size_t>(std::ceil(max_end - min_start)) + 1;
  p.tokens_per_second.assign(buckets, 0);
  std::vector<int> concurrent(buckets, 0);
  for (const auto& r : results) {
    if (!r.success) continue;
    double t = r.start_time + r.ttft;
    auto add_token = [&](double at) {
      // int() in Python truncates toward zero; times here are >= min_start so floor is the same.
      const double rel = at - min_start;
      if (rel < 0) return;
      const size_t b = static_cast<size_t>(rel);
      if (b < buckets) p.tokens_per_second[b] += 1;
    };
    add_token(t);
    for (double gap : r.itl) {
      t += gap;
      add_token(t);
    }
    const size_t first = static_cast<size_t>(r.start_time - min_start);
    const size_t last = std::min(buckets - 1, static_cast<size_t>(r.start_time + r.latency - min_start));
    for (size_t s = first; s <= last; ++s) concurrent[s] += 1;
  }
  p.max_output_tokens_per_s = *std::max_element(p.tokens_per_second.begin(), p.tokens_per_second.end());
  p.max_concurrent_requests = *std::max_element(concurrent.begin(), concurrent.end());
  return p;
}

BenchmarkMetrics compute_metrics(const std::vector<RequestResult>& results, double duration_s,
                                 const GoodputSlo& slo) {
  BenchmarkMetrics m;
  m.duration_s = duration_s;
  m.slo = slo;
  std::vector<double> ttfts, tpots, itls, e2els;
  for (const auto& r : results) {
    if (!r.success) {
      ++m.failed;
      continue;
    }
    ++m.completed;
    m.total_input += r.prompt_len;
    m.total_output += r.output_tokens;
    const auto tpot = request_tpot(r);
    if (tpot) tpots.push_back(*tpot * 1000);
    for (double gap : r.itl) itls.push_back(gap * 1000);
    ttfts.push_back(r.ttft * 1000);
    e2els.push_back(r.latency * 1000);
    if (slo.any()) {
      // vLLM: a request with <= 1 output token has TPOT 0 for goodput; an objective holds when
      // the objective >= the request's value.
      const double tpot_ms = tpot ? *tpot * 1000 : 0;
      const bool good = (!slo.ttft_ms || *slo.ttft_ms >= r.ttft * 1000) &&
                        (!slo.tpot_ms || *slo.tpot_ms >= tpot_ms) &&
                        (!slo.e2el_ms || *slo.e2el_ms >= r.latency * 1000);
      if (good) ++m.good_requests;
    }
  }
  const double d = duration_s > 0 ? duration_s : 1;  // a zero-length run reports totals per second of 1 s
  m.request_throughput = m.completed / d;
  m.request_goodput = m.good_requests / d;
  m.input_throughput = static_cast<double>(m.total_input) / d;
  m.output_throughput = static_cast<double>(m.total_output) / d;
  m.total_token_throughput = static_cast<double>(m.total_input + m.total_output) / d;
  m.peak = peak_throughput(results);
  m.ttft_ms = summarize(ttfts);
  m.tpot_ms = summarize(tpots);
  m.itl_ms = summarize(itls);
  m.e2el_ms = summarize(e2els);
  return m;
}

nlohmann::json metrics_json(const BenchmarkMetrics& m) {
  nlohmann::json j = {
      {"completed", m.completed},
      {"failed", m.failed},
      {"duration", m.duration_s},
      {"total_input_tokens", m.total_input},
      {"total_output_tokens", m.total_output},
      {"request_throughput", m.request_throughput},
      {"request_goodput", m.slo.any() ? nlohmann::json(m.request_goodput) : nlohmann::json(nullptr)},
      {"input_throughput", m.input_throughput},
      {"output_throughput", m.output_throughput},
      {"total_token_throughput", m.total_token_throughput},
      {"max_output_tokens_per_s", m.peak.max_output_tokens_per_s},
      {"max_concurrent_requests", m.peak.max_concurrent_requests},
  };
  auto put = [&](const char* name, const Distribution& d) {
    const std::string n = name;
    j["mean_" + n + "_ms"] = d.mean;
    j["median_" + n + "_ms"] = d.median;
    j["std_" + n + "_ms"] = d.std;
    j["p90_" + n + "_ms"] = d.p90;
    j["p99_" + n + "_ms"] = d.p99;
  };
  put("ttft", m.ttft_ms);
  put("tpot", m.tpot_ms);
  put("itl", m.itl_ms);
  put("e2el", m.e2el_ms);
  if (m.slo.any()) {
    nlohmann::json slo = nlohmann::json::object();
    if (m.slo.ttft_ms) slo["ttft"] = *m.slo.ttft_ms;
    if (m.slo.tpot_ms) slo["tpot"] = *m.slo.tpot_ms;
    if (m.slo.e2el_ms) slo["e2el"] = *m.slo.e2el_ms;
    j["goodput_slo_ms"] = slo;
  }
  return j;
}

}  // namespace gs::bench
