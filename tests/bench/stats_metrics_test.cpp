// Metric arithmetic on synthetic timings: numpy's percentiles, vLLM's TPOT rules, goodput and
// peak-throughput buckets.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "bench/goodput.h"
#include "bench/metrics.h"
#include "bench/stats.h"
#include "core/error.h"

namespace gs::bench {
namespace {

// Values numpy 1.x gives (np.percentile, default linear method; np.std ddof=0).
TEST(Stats, PercentileMatchesNumpyOnKnownSamples) {
  EXPECT_DOUBLE_EQ(percentile({1, 2, 3, 4}, 90), 3.7);
  EXPECT_NEAR(percentile({5, 1, 9, 3, 7}, 99), 8.92, 1e-12);
  EXPECT_DOUBLE_EQ(percentile({2.5}, 50), 2.5);
  std::vector<double> ten = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  EXPECT_DOUBLE_EQ(percentile(ten, 50), 5.5);
  EXPECT_NEAR(percentile(ten, 90), 9.1, 1e-12);
  EXPECT_NEAR(percentile(ten, 99), 9.91, 1e-12);
  EXPECT_DOUBLE_EQ(percentile({}, 99), 0.0);
  EXPECT_THROW(percentile({1.0}, 101), Error);
  Distribution d = summarize({1, 2, 3, 4});
  EXPECT_NEAR(d.std, 1.118033988749895, 1e-12);
  EXPECT_DOUBLE_EQ(d.mean, 2.5);
  EXPECT_DOUBLE_EQ(d.median, 2.5);
}

// On fresh random samples: the definition (rank p/100*(n-1), linear between neighbours) computed
// independently, plus its invariants.
TEST(Stats, PercentileDefinitionOnRandomSamples) {
  std::mt19937_64 rng(std::random_device{}());
  std::uniform_real_distribution<double> u(0, 1000);
  for (int trial = 0; trial < 50; ++trial) {
    const size_t n = 1 + rng() % 200;
    std::vector<double> v(n);
    for (double& x : v) x = u(rng);
    std::vector<double> s = v;
    std::sort(s.begin(), s.end());
    EXPECT_DOUBLE_EQ(percentile(v, 0), s.front());
    EXPECT_DOUBLE_EQ(percentile(v, 100), s.back());
    const double p = u(rng) / 10;  // [0, 100)
    const double rank = p / 100 * static_cast<double>(n - 1);
    const size_t lo = static_cast<size_t>(rank);
    const double expect = lo + 1 < n ? s[lo] * (1 - (rank - lo)) + s[lo + 1] * (rank - lo) : s[lo];
    EXPECT_NEAR(percentile(v, p), expect, 1e-9);
    EXPECT_LE(percentile(v, 50), percentile(v, 90));
    EXPECT_LE(percentile(v, 90), percentile(v, 99));
  }
}

RequestResult ok(double start, double ttft, std::vector<double> itl, int out_tokens, int prompt = 10) {
  RequestResult r;
  r.success = true;
  r.start_time = start;
  r.ttft = ttft;
  r.itl = std::move(itl);
  r.latency = ttft;
  for (double g : r.itl) r.latency += g;
  r.output_tokens = out_tokens;
  r.prompt_len = prompt;
  return r;
}

TEST(Metrics, TpotOnlyForRequestsWithMoreThanOneToken) {
  std::vector<RequestResult> rs = {ok(0, 0.1, {0.02, 0.04}, 3), ok(0, 0.2, {}, 1), ok(0, 0.3, {}, 0)};
  RequestResult failed;
  failed.error = "HTTP 500";
  failed.output_tokens = 99;
  failed.prompt_len = 1000;
  rs.push_back(failed);
  const BenchmarkMetrics m = compute_metrics(rs, 2.0, {});
  EXPECT_EQ(m.completed, 3);
  EXPECT_EQ(m.failed, 1);
  EXPECT_EQ(m.total_output, 4);  // failed requests add nothing
  EXPECT_EQ(m.total_input, 30);
  ASSERT_EQ(m.tpot_ms.count, 1u);
  EXPECT_NEAR(m.tpot_ms.mean, (0.16 - 0.1) / 2 * 1000, 1e-9);
  EXPECT_EQ(m.itl_ms.count, 2u);
  EXPECT_NEAR(m.itl_ms.mean, 30, 1e-9);
  EXPECT_EQ(m.ttft_ms.count, 3u);
  EXPECT_NEAR(m.ttft_ms.median, 200, 1e-9);
  EXPECT_NEAR(m.request_throughput, 1.5, 1e-12);
  EXPECT_NEAR(m.output_throughput, 2.0, 1e-12);
  EXPECT_NEAR(m.input_throughput, 15.0, 1e-12);
  EXPECT_NEAR(m.total_token_throughput, 17.0, 1e-12);
  EXPECT_FALSE(request_tpot(rs[1]).has_value());
  EXPECT_FALSE(request_tpot(failed).has_value());
}

TEST(Metrics, TpotIsMeanGapWhenEveryChunkIsOneToken) {
  std::mt19937_64 rng(std::random_device{}());
  std::uniform_real_distribution<double> gap(0.001, 0.05);
  std::vector<double> itl(1 + rng() % 100);
  double sum = 0;
  for (double& g : itl) sum += (g = gap(rng));
  const RequestResult r = ok(0, 0.5, itl, static_cast<int>(itl.size()) + 1);
  EXPECT_NEAR(*request_tpot(r), sum / static_cast<double>(itl.size()), 1e-12);
}

TEST(Metrics, GoodputCountsRequestsMeetingEveryObjective) {
  // ttft 100 ms / tpot 20 ms; ttft 300 ms / tpot 20 ms; ttft 100 ms / tpot 60 ms; one token (tpot 0).
  std::vector<RequestResult> rs = {ok(0, 0.1, {0.02, 0.02}, 3), ok(0, 0.3, {0.02, 0.02}, 3),
                                   ok(0, 0.1, {0.06, 0.06}, 3), ok(0, 0.1, {}, 1)};
  EXPECT_EQ(compute_metrics(rs, 1, parse_goodput({"ttft:200"})).good_requests, 3);
  EXPECT_EQ(compute_metrics(rs, 1, parse_goodput({"tpot:50"})).good_requests, 3);
  EXPECT_EQ(compute_metrics(rs, 1, parse_goodput({"ttft:200", "tpot:50"})).good_requests, 2);
  EXPECT_EQ(compute_metrics(rs, 2, parse_goodput({"ttft:200 tpot:50"})).request_goodput, 1.0);
  // e2el: 0.14, 0.34, 0.22, 0.1 s
  EXPECT_EQ(compute_metrics(rs, 1, parse_goodput({"e2el:200"})).good_requests, 2);
  // Objectives are inclusive (objective >= value), as vLLM compares.
  EXPECT_EQ(compute_metrics(rs, 1, parse_goodput({"ttft:100"})).good_requests, 3);
  EXPECT_FALSE(compute_metrics(rs, 1, {}).slo.any());
  EXPECT_TRUE(metrics_json(compute_metrics(rs, 1, {}))["request_goodput"].is_null());
}

TEST(Metrics, GoodputParseErrorsNameTheProblem) {
  auto msg = [](std::vector<std::string> v) {
    try {
      parse_goodput(v);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(msg({"ttft"}).find("NAME:MILLISECONDS"), std::string::npos);
  EXPECT_NE(msg({"latency:5"}).find("unknown objective 'latency'"), std::string::npos);
  EXPECT_NE(msg({"ttft:fast"}).find("not a number"), std::string::npos);
  EXPECT_NE(msg({"ttft:5ms"}).find("not a number"), std::string::npos);
  EXPECT_NE(msg({"tpot:-1"}).find("negative"), std::string::npos);
}

TEST(Metrics, PeakThroughputUsesOneSecondBucketsFromTheEarliestStart) {
  // Request A starts at 10.0: chunks at 10.2, 10.5, 10.9, 11.1. Request B starts at 10.4: chunks
  // at 10.6, 10.7, 12.6. Buckets from 10.0: [0,1): 5 chunks, [1,2): 1, [2,3): 1.
  std::vector<RequestResult> rs = {ok(10.0, 0.2, {0.3, 0.4, 0.2}, 4), ok(10.4, 0.2, {0.1, 1.9}, 3)};
  RequestResult failed;
  failed.start_time = 0;  // failed requests neither move the origin nor add tokens
  rs.push_back(failed);
  const PeakThroughput p = peak_throughput(rs);
  ASSERT_EQ(p.tokens_per_second.size(), 4u);  // ceil(12.6 - 10.0) + 1
  EXPECT_EQ(p.tokens_per_second[0], 5);
  EXPECT_EQ(p.tokens_per_second[1], 1);
  EXPECT_EQ(p.tokens_per_second[2], 1);
  EXPECT_EQ(p.tokens_per_second[3], 0);
  EXPECT_EQ(p.max_output_tokens_per_s, 5);
  EXPECT_EQ(p.max_concurrent_requests, 2);
  EXPECT_EQ(peak_throughput({failed}).max_output_tokens_per_s, 0);
}

TEST(Metrics, PeakThroughputCountsEveryChunkOnRandomRuns) {
  std::mt19937_64 rng(std::random_device{}());
  std::uniform_real_distribution<double> u(0, 3);
  std::vector<RequestResult> rs;
  int chunks = 0;
  for (int i = 0; i < 40; ++i) {
    std::vector<double> itl(rng() % 20);
    for (double& g : itl) g = u(rng) / 10;
    chunks += 1 + static_cast<int>(itl.size());
    rs.push_back(ok(u(rng), u(rng), itl, 1 + static_cast<int>(itl.size())));
  }
  const PeakThroughput p = peak_throughput(rs);
  double total = 0;
  for (double b : p.tokens_per_second) total += b;
  EXPECT_EQ(total, chunks);
  EXPECT_LE(p.max_concurrent_requests, 40);
  EXPECT_GE(p.max_concurrent_requests, 1);
}

TEST(Metrics, JsonHasEveryVllmKey) {
  const nlohmann::json j = metrics_json(compute_metrics({ok(0, 0.1, {0.01}, 2)}, 1, parse_goodput({"ttft:1"})));
  for (const char* k : {"completed", "failed", "duration", "total_input_tokens", "total_output_tokens",
                        "request_throughput", "request_goodput", "input_throughput", "output_throughput",
                        "total_token_throughput", "max_output_tokens_per_s", "max_concurrent_requests"}) {
    EXPECT_TRUE(j.contains(k)) << k;
  }
  for (const char* m : {"ttft", "tpot", "itl", "e2el"}) {
    for (const char* s : {"mean", "median", "std", "p90", "p99"}) {
      EXPECT_TRUE(j.contains(std::string(s) + "_" + m + "_ms")) << s << "_" << m;
    }
  }
}

}  // namespace
}  // namespace gs::bench
