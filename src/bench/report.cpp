#include "bench/report.h"

#include <fmt/format.h>

#include <cmath>

#include "bench/svg_chart.h"

namespace gs::bench {
namespace {

std::string heading(const std::string& title, char fill) {
  constexpr size_t kWidth = 50;
  if (title.size() + 2 >= kWidth) return title + "\n";
  const size_t left = (kWidth - title.size()) / 2, right = kWidth - title.size() - left;
  return std::string(left, fill) + title + std::string(right, fill) + "\n";
}

std::string row(const std::string& name, const std::string& value) { return fmt::format("{:<40} {:<10}\n", name, value); }
std::string row(const std::string& name, double v) { return row(name, fmt::format("{:.2f}", v)); }

std::string distribution_rows(const std::string& title, const std::string& abbrev, const Distribution& d) {
  std::string s = heading(title, '-');
  s += row("Mean " + abbrev + " (ms):", d.mean);
  s += row("Median " + abbrev + " (ms):", d.median);
  s += row("Std " + abbrev + " (ms):", d.std);
  s += row("P90 " + abbrev + " (ms):", d.p90);
  s += row("P99 " + abbrev + " (ms):", d.p99);
  return s;
}

}  // namespace

std::string metrics_table(const BenchmarkMetrics& m, const RunDescription& d) {
  std::string s = heading(" Serving Benchmark Result ", '=');
  s += row("Successful requests:", std::to_string(m.completed));
  s += row("Failed requests:", std::to_string(m.failed));
  s += row("Maximum request concurrency:", d.max_concurrency > 0 ? std::to_string(d.max_concurrency) : "unlimited");
  s += row("Request rate (req/s):", std::isinf(d.request_rate) ? "inf" : fmt::format("{:.2f}", d.request_rate));
  s += row("Benchmark duration (s):", m.duration_s);
  s += row("Total input tokens:", std::to_string(m.total_input));
  s += row("Total generated tokens:", std::to_string(m.total_output));
  s += row("Request throughput (req/s):", m.request_throughput);
  if (m.slo.any()) s += row("Request goodput (req/s):", m.request_goodput);
  s += row("Input token throughput (tok/s):", m.input_throughput);
  s += row("Output token throughput (tok/s):", m.output_throughput);
  s += row("Peak output token throughput (tok/s):", m.peak.max_output_tokens_per_s);
  s += row("Peak concurrent requests:", std::to_string(m.peak.max_concurrent_requests));
  s += row("Total token throughput (tok/s):", m.total_token_throughput);
  if (d.spec_accept_length) s += row("Spec decode acceptance length:", *d.spec_accept_length);
  s += distribution_rows("Time to First Token", "TTFT", m.ttft_ms);
  s += distribution_rows("Time per Output Token (excl. 1st token)", "TPOT", m.tpot_ms);
  s += distribution_rows("Inter-token Latency", "ITL", m.itl_ms);
  s += distribution_rows("End-to-end Latency", "E2EL", m.e2el_ms);
  s += std::string(50, '=') + "\n";
  return s;
}

std::string requests_jsonl(const std::vector<RequestResult>& results) {
  std::string out;
  for (size_t i = 0; i < results.size(); ++i) {
    const RequestResult& r = results[i];
    const auto tpot = request_tpot(r);
    nlohmann::json j = {{"index", i},
                        {"success", r.success},
                        {"error", r.success ? nlohmann::json(nullptr) : nlohmann::json(r.error)},
                        {"start_time", r.start_time},
                        {"prompt_len", r.prompt_len},
                        {"expected_output_len", r.expected_output_len},
                        {"output_len", r.output_tokens},
                        {"output_len_from_usage", r.output_tokens_from_usage},
                        {"ttft", r.ttft},
                        {"tpot", tpot ? nlohmann::json(*tpot) : nlohmann::json(nullptr)},
                        {"e2el", r.latency},
                        {"itl", r.itl}};
    out += j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  }
  return out;
}

std::vector<std::string> write_run_plots(const std::string& dir, const std::vector<RequestResult>& results,
                                         const BenchmarkMetrics& m) {
  std::vector<double> ttft, tpot, itl, e2el;
  for (const auto& r : results) {
    if (!r.success) continue;
    ttft.push_back(r.ttft * 1000);
    if (auto t = request_tpot(r)) tpot.push_back(*t * 1000);
    for (double g : r.itl) itl.push_back(g * 1000);
    e2el.push_back(r.latency * 1000);
  }
  std::vector<std::string> written;
  auto cdf = [&](const std::string& file, const std::string& what, const std::vector<double>& v) {
    Chart c{what + " CDF (" + std::to_string(v.size()) + " samples)", what + " (ms)", "fraction of samples <= x",
            {{what, cdf_points(v), false, {}}}};
    const std::string path = dir + "/" + file;
    write_text_file(path, render_svg(c));
    written.push_back(path);
  };
  cdf("ttft_cdf.svg", "TTFT", ttft);
  cdf("tpot_cdf.svg", "TPOT", tpot);
  cdf("itl_cdf.svg", "ITL", itl);
  cdf("e2el_cdf.svg", "E2E latency", e2el);

  Series tput{"output tok/s", {}, false, {}};
  for (size_t s = 0; s < m.peak.tokens_per_second.size(); ++s) {
    // Each bucket drawn across its second, so the curve reads as a step function.
    tput.points.emplace_back(static_cast<double>(s), m.peak.tokens_per_second[s]);
    tput.points.emplace_back(static_cast<double>(s + 1), m.peak.tokens_per_second[s]);
  }
  Chart c{"Output throughput over time (1 s buckets)", "seconds since the first request", "output tokens per second",
          {tput}};
  const std::string path = dir + "/output_throughput.svg";
  write_text_file(path, render_svg(c));
  written.push_back(path);
  return written;
}

}  // namespace gs::bench
