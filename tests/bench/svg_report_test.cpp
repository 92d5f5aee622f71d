// SVG output is well-formed XML (checked by a small strict parser here), plots and reports
// carry what they claim, sweeps and Prometheus text parse as documented.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "bench/report.h"
#include "bench/spec_metrics.h"
#include "bench/svg_chart.h"
#include "bench/sweep.h"
#include "core/error.h"

namespace gs::bench {
namespace {

// Strict enough for generated SVG: one root element, every tag closed in order, attributes
// quoted, no raw '<' or unescaped '&' in text or attribute values. Returns "" or the problem.
std::string xml_problem(const std::string& s) {
  size_t i = 0;
  if (s.rfind("<?xml", 0) == 0) {
    i = s.find("?>");
    if (i == std::string::npos) return "unterminated XML declaration";
    i += 2;
  }
  std::vector<std::string> stack;
  int roots = 0;
  auto check_entities = [](std::string_view t) -> std::string {
    for (size_t k = 0; k < t.size(); ++k) {
      if (t[k] == '<') return "raw '<' in text";
      if (t[k] == '&') {
        const size_t semi = t.find(';', k);
        if (semi == std::string::npos) return "unterminated entity";
        const std::string_view e = t.substr(k, semi - k + 1);
        if (e != "&amp;" && e != "&lt;" && e != "&gt;" && e != "&quot;" && e != "&apos;") return "unknown entity";
      }
    }
    return "";
  };
  while (i < s.size()) {
    const size_t lt = s.find('<', i);
    const std::string_view text = std::string_view(s).substr(i, (lt == std::string::npos ? s.size() : lt) - i);
    if (auto p = check_entities(text); !p.empty()) return p;
    if (stack.empty() && text.find_first_not_of(" \n\r\t") != std::string_view::npos) return "text outside the root";
    if (lt == std::string::npos) break;
    const size_t gt = s.find('>', lt);
    if (gt == std::string::npos) return "unterminated tag";
    std::string tag = s.substr(lt + 1, gt - lt - 1);
    i = gt + 1;
    if (tag.empty()) return "empty tag";
    if (tag[0] == '/') {
      if (stack.empty() || stack.back() != tag.substr(1)) return "mismatched </" + tag.substr(1) + ">";
      stack.pop_back();
      continue;
    }
    const bool self_closing = tag.back() == '/';
    if (self_closing) tag.pop_back();
    const size_t name_end = tag.find_first_of(" \n\t");
    const std::string name = tag.substr(0, name_end);
    // attributes: name="value" pairs
    size_t k = name_end == std::string::npos ? tag.size() : name_end;
    while (k < tag.size()) {
      k = tag.find_first_not_of(" \n\t", k);
      if (k == std::string::npos) break;
      const size_t eq = tag.find('=', k);
      if (eq == std::string::npos || eq + 1 >= tag.size() || tag[eq + 1] != '"') return "unquoted attribute in <" + name + ">";
      const size_t close = tag.find('"', eq + 2);
      if (close == std::string::npos) return "unterminated attribute";
      if (auto p = check_entities(std::string_view(tag).substr(eq + 2, close - eq - 2)); !p.empty()) return p;
      k = close + 1;
    }
    if (stack.empty()) ++roots;
    if (!self_closing) stack.push_back(name);
  }
  if (!stack.empty()) return "unclosed <" + stack.back() + ">";
  if (roots != 1) return "expected one root element";
  return "";
}

TEST(Svg, CheckerCatchesBrokenXml) {
  EXPECT_EQ(xml_problem("<svg><g/></svg>"), "");
  EXPECT_NE(xml_problem("<svg><g></svg>"), "");
  EXPECT_NE(xml_problem("<svg>a < b</svg>"), "");
  EXPECT_NE(xml_problem("<svg x=1/>"), "");
  EXPECT_NE(xml_problem("<svg>&nbsp;</svg>"), "");
  EXPECT_NE(xml_problem("<svg/><svg/>"), "");
}

TEST(Svg, ChartsAreWellFormedWithAnyDataAndNames) {
  std::mt19937_64 rng(std::random_device{}());
  std::uniform_real_distribution<double> u(-5, 5000);
  for (int trial = 0; trial < 20; ++trial) {
    Chart c{"T <&> \"q\" 'a'", "x & y", "<y>", {}};
    for (int s = 0; s < 1 + trial % 4; ++s) {
      Series se{"series <" + std::to_string(s) + "> & co", {}, trial % 2 == 0, {}};
      const size_t n = rng() % 50;
      for (size_t i = 0; i < n; ++i) {
        se.points.emplace_back(u(rng), u(rng));
        se.point_labels.push_back("c=" + std::to_string(i) + " & <x>");
      }
      if (trial == 3) se.points.emplace_back(NAN, INFINITY);  // skipped, never printed
      c.series.push_back(se);
    }
    const std::string svg = render_svg(c);
    EXPECT_EQ(xml_problem(svg), "") << svg;
    EXPECT_EQ(svg.find("nan"), std::string::npos);
    EXPECT_EQ(svg.find("inf"), std::string::npos);
    EXPECT_NE(svg.find("series &lt;0&gt; &amp; co"), std::string::npos);
  }
  EXPECT_EQ(xml_problem(render_svg(Chart{})), "");
}

TEST(Svg, CdfAndTicks) {
  const auto pts = cdf_points({3, 1, 2, 2});
  ASSERT_EQ(pts.size(), 4u);
  EXPECT_EQ(pts[0], std::make_pair(1.0, 0.25));
  EXPECT_EQ(pts[3], std::make_pair(3.0, 1.0));
  const auto t = nice_ticks(0, 97, 5);
  EXPECT_EQ(t.front(), 0);
  EXPECT_GE(t.back(), 97 - 20);
  for (size_t i = 1; i < t.size(); ++i) EXPECT_NEAR(t[i] - t[i - 1], 20, 1e-9);
}

RequestResult ok_result(double start, double ttft, std::vector<double> itl) {
  RequestResult r;
  r.success = true;
  r.start_time = start;
  r.ttft = ttft;
  r.latency = ttft;
  for (double g : itl) r.latency += g;
  r.itl = std::move(itl);
  r.output_tokens = 1 + static_cast<int>(r.itl.size());
  r.prompt_len = 5;
  return r;
}

TEST(Report, RunPlotsRequestsJsonlAndTable) {
  const auto dir = std::filesystem::temp_directory_path() / ("gs_bench_plots_" + std::to_string(::getpid()));
  std::vector<RequestResult> rs = {ok_result(0, 0.1, {0.01, 0.02}), ok_result(0.5, 0.2, {})};
  RequestResult bad;
  bad.error = "HTTP 503: \"busy\"";
  rs.push_back(bad);
  const BenchmarkMetrics m = compute_metrics(rs, 1.5, {});
  const auto files = write_run_plots(dir.string(), rs, m);
  ASSERT_EQ(files.size(), 5u);
  for (const auto& f : files) {
    std::ifstream in(f);
    std::stringstream ss;
    ss << in.rdbuf();
    EXPECT_EQ(xml_problem(ss.str()), "") << f;
  }
  std::filesystem::remove_all(dir);

  std::istringstream lines(requests_jsonl(rs));
  std::string line;
  std::vector<nlohmann::json> js;
  while (std::getline(lines, line)) js.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(js.size(), 3u);
  EXPECT_EQ(js[0]["itl"].size(), 2u);
  EXPECT_NEAR(js[0]["tpot"].get<double>(), 0.015, 1e-12);
  EXPECT_TRUE(js[1]["tpot"].is_null());
  EXPECT_EQ(js[2]["error"], "HTTP 503: \"busy\"");
  EXPECT_EQ(js[2]["success"], false);

  const std::string table = metrics_table(m, {4, INFINITY, 2.5});
  for (const char* s : {"Successful requests:", "Failed requests:", "Peak output token throughput", "Mean TTFT (ms):",
                        "P99 ITL (ms):", "Median E2EL (ms):", "Spec decode acceptance length:", "inf"}) {
    EXPECT_NE(table.find(s), std::string::npos) << s;
  }
  EXPECT_EQ(metrics_table(m, {0, 2, std::nullopt}).find("acceptance"), std::string::npos);
}

TEST(Sweep, ParseTableJsonAndPlot) {
  const SweepSpec s = parse_sweep("max-concurrency=1,16,64,100");
  EXPECT_EQ(s.param, SweepParam::MaxConcurrency);
  EXPECT_EQ(s.values, (std::vector<double>{1, 16, 64, 100}));
  const SweepSpec r = parse_sweep("request-rate=0.5,inf");
  EXPECT_TRUE(std::isinf(r.values[1]));
  EXPECT_THROW(parse_sweep("max-concurrency=1,inf"), Error);
  EXPECT_THROW(parse_sweep("max-concurrency=1.5"), Error);
  EXPECT_THROW(parse_sweep("max-concurrency=0"), Error);
  EXPECT_THROW(parse_sweep("batch=1"), Error);
  EXPECT_THROW(parse_sweep("max-concurrency"), Error);
  EXPECT_THROW(parse_sweep("request-rate=1,,2"), Error);
  std::vector<SweepPoint> pts;
  for (double v : r.values) pts.push_back({v, compute_metrics({ok_result(0, 0.1, {0.01})}, 1, {})});
  const std::string table = sweep_table(r, pts);
  EXPECT_NE(table.find("request-rate"), std::string::npos);
  EXPECT_NE(table.find("inf"), std::string::npos);
  const nlohmann::json j = sweep_json(r, pts);
  EXPECT_EQ(j["runs"].size(), 2u);
  EXPECT_EQ(j["runs"][1]["request-rate"], "inf");
  EXPECT_TRUE(j["runs"][0].contains("p99_tpot_ms"));
  EXPECT_EQ(xml_problem(sweep_svg(r, pts)), "");
}

TEST(SpecMetrics, PrometheusParsingAndAcceptanceLength) {
  const auto m = parse_prometheus(
      "# HELP vllm:spec_decode_num_drafts_total Drafts.\n# TYPE vllm:spec_decode_num_drafts_total counter\n"
      "vllm:spec_decode_num_drafts_total{model_name=\"a\",engine=\"0\"} 10\n"
      "vllm:spec_decode_num_drafts_total{model_name=\"a\",engine=\"1\"} 30\n"
      "vllm:spec_decode_num_accepted_tokens_total{model_name=\"a\"} 100 1712345678\n"
      "garbage line\nnot_a_number{x=\"1\"} abc\n");
  EXPECT_DOUBLE_EQ(m.at("vllm:spec_decode_num_drafts_total"), 40);
  EXPECT_DOUBLE_EQ(m.at("vllm:spec_decode_num_accepted_tokens_total"), 100);
  EXPECT_EQ(m.count("not_a_number"), 0u);
  SpecSnapshot before{{{"vllm:spec_decode_num_drafts_total", 10}, {"vllm:spec_decode_num_accepted_tokens_total", 25}}};
  SpecSnapshot after{m};
  EXPECT_DOUBLE_EQ(*spec_accept_length(before, after), 1 + 75.0 / 30);
  EXPECT_FALSE(spec_accept_length(after, after).has_value());  // no drafts during the run
  EXPECT_FALSE(spec_accept_length({}, {}).has_value());
  EXPECT_DOUBLE_EQ(*spec_accept_length({}, SpecSnapshot{{{"sglang:spec_accept_length", 2.7}}}), 2.7);
  SpecSnapshot ours{{{"gemmaserve_spec_decode_num_drafts_total", 4}, {"gemmaserve_spec_decode_num_accepted_tokens_total", 6}}};
  EXPECT_DOUBLE_EQ(*spec_accept_length({}, ours), 2.5);
}

}  // namespace
}  // namespace gs::bench
