#include "bench/sweep.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <sstream>

#include "bench/svg_chart.h"
#include "core/error.h"

namespace gs::bench {

const char* sweep_param_name(SweepParam p) {
  return p == SweepParam::MaxConcurrency ? "max-concurrency" : "request-rate";
}

SweepSpec parse_sweep(const std::string& text) {
  const auto eq = text.find('=');
  GS_CHECK(eq != std::string::npos, "--sweep '{}' is not PARAM=V1,V2,... (max-concurrency or request-rate)", text);
  SweepSpec s;
  const std::string name = text.substr(0, eq);
  if (name == "max-concurrency") s.param = SweepParam::MaxConcurrency;
  else if (name == "request-rate") s.param = SweepParam::RequestRate;
  else throw Error("--sweep: unknown parameter '{}' (max-concurrency or request-rate)", name);
  std::istringstream items(text.substr(eq + 1));
  std::string item;
  while (std::getline(items, item, ',')) {
    double v = 0;
    if (item == "inf" && s.param == SweepParam::RequestRate) {
      v = std::numeric_limits<double>::infinity();
    } else {
      try {
        size_t used = 0;
        v = std::stod(item, &used);
        GS_CHECK(used == item.size(), "--sweep: '{}' is not a number", item);
      } catch (const std::logic_error&) {
        throw Error("--sweep: '{}' is not a number", item);
      }
      GS_CHECK(v > 0 && std::isfinite(v), "--sweep: {} values must be positive and finite (got {}; request-rate "
               "also takes inf)", name, item);
      if (s.param == SweepParam::MaxConcurrency) {
        GS_CHECK(v == std::floor(v), "--sweep: max-concurrency {} is not a whole number", item);
      }
    }
    s.values.push_back(v);
  }
  GS_CHECK(!s.values.empty(), "--sweep '{}' lists no values", text);
  return s;
}

namespace {
std::string value_str(double v) { return std::isinf(v) ? "inf" : fmt::format("{:g}", v); }
}  // namespace

std::string sweep_table(const SweepSpec& spec, const std::vector<SweepPoint>& points) {
  std::string s = fmt::format("{:>16} {:>6} {:>6} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}\n",
                              sweep_param_name(spec.param), "ok", "failed", "req/s", "out tok/s", "peak tok/s",
                              "TTFT p50", "TTFT p99", "TPOT p50", "TPOT p99", "E2E p50");
  for (const auto& p : points) {
    const auto& m = p.metrics;
    s += fmt::format("{:>16} {:>6} {:>6} {:>10.2f} {:>10.1f} {:>10.0f} {:>10.2f} {:>10.2f} {:>10.2f} {:>10.2f} {:>10.1f}\n",
                     value_str(p.value), m.completed, m.failed, m.request_throughput, m.output_throughput,
                     m.peak.max_output_tokens_per_s, m.ttft_ms.median, m.ttft_ms.p99, m.tpot_ms.median, m.tpot_ms.p99,
                     m.e2el_ms.median);
  }
  s += "(latencies in ms)\n";
  return s;
}

nlohmann::json sweep_json(const SweepSpec& spec, const std::vector<SweepPoint>& points) {
  nlohmann::json runs = nlohmann::json::array();
  for (const auto& p : points) {
    nlohmann::json j = metrics_json(p.metrics);
    j[sweep_param_name(spec.param)] = std::isinf(p.value) ? nlohmann::json("inf") : nlohmann::json(p.value);
    runs.push_back(j);
  }
  return {{"sweep", sweep_param_name(spec.param)}, {"runs", runs}};
}

std::string sweep_svg(const SweepSpec& spec, const std::vector<SweepPoint>& points) {
  Series tpot{"median TPOT", {}, true, {}}, e2e{"median E2E / 10", {}, true, {}};
  for (const auto& p : points) {
    const std::string label = fmt::format("{}={}", spec.param == SweepParam::MaxConcurrency ? "c" : "rate",
                                          value_str(p.value));
    tpot.points.emplace_back(p.metrics.tpot_ms.median, p.metrics.output_throughput);
    tpot.point_labels.push_back(label);
    // E2E is tens of times TPOT; scaled by 1/10 so both curves share a readable x axis.
    e2e.points.emplace_back(p.metrics.e2el_ms.median / 10, p.metrics.output_throughput);
    e2e.point_labels.push_back(label);
  }
  Chart c{fmt::format("Output throughput vs latency (sweep over {})", sweep_param_name(spec.param)),
          "latency (ms; E2E divided by 10)", "output tokens per second", {tpot, e2e}};
  return render_svg(c);
}

}  // namespace gs::bench
