// Sampling: greedy ties, seeded reproducibility and row independence, the distribution of
// temperature sampling, and that top-k / top-p / min-p never let a filtered token through.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <map>
#include <numeric>
#include <set>

#include "ops/sampling_rng.h"
#include "test_util.h"

namespace gs::test {
namespace {

class CpuSampling : public testing::Test {
 protected:
  std::unique_ptr<Backend> be = make_cpu_backend(3);
  Rng rng;

  // Samples every row of `logits`; returns (ids, logprobs).
  std::pair<std::vector<int>, std::vector<float>> sample(const Tensor& logits, const std::vector<SamplingRow>& rows) {
    Tensor ids = host_tensor(DType::I32, Shape{int64_t(rows.size())});
    Tensor lp = poisoned(Shape{int64_t(rows.size())});
    be->sample(logits, rows, ids, lp);
    return {std::vector<int>(ids.ptr<int>(), ids.ptr<int>() + rows.size()),
            std::vector<float>(lp.ptr<float>(), lp.ptr<float>() + rows.size())};
  }
};

double log_softmax_ref(const Tensor& l, int row, int V, int tok) {
  double mx = -INFINITY;
  for (int v = 0; v < V; ++v) mx = std::max(mx, value(l, int64_t(row) * V + v));
  double s = 0;
  for (int v = 0; v < V; ++v) s += std::exp(value(l, int64_t(row) * V + v) - mx);
  return value(l, int64_t(row) * V + tok) - mx - std::log(s);
}

TEST_F(CpuSampling, GreedyTakesTheLowestIdOnTiesAndReportsItsLogprob) {
  SCOPED_TRACE(rng.trace());
  const int V = rng.integer(10, 500);
  Tensor l = random_tensor(rng, DType::F32, Shape{2, V}, -5, 5);
  const int a = rng.integer(1, V - 1), b = rng.integer(0, a - 1);
  l.ptr<float>()[a] = l.ptr<float>()[b] = 9.f;  // row 0: tie between b < a
  auto [ids, lp] = sample(l, {SamplingRow{}, SamplingRow{}});
  EXPECT_EQ(ids[0], b);
  const int want1 = int(std::max_element(l.ptr<float>() + V, l.ptr<float>() + 2 * V) - (l.ptr<float>() + V));
  EXPECT_EQ(ids[1], want1);
  EXPECT_NEAR(lp[0], log_softmax_ref(l, 0, V, b), 1e-5);
  EXPECT_NEAR(lp[1], log_softmax_ref(l, 1, V, want1), 1e-5);
}

TEST_F(CpuSampling, SeededDrawsAreReproducibleAndIndependentOfTheBatch) {
  SCOPED_TRACE(rng.trace());
  const int V = 300;
  Tensor one = random_tensor(rng, DType::F32, Shape{1, V}, -2, 2);
  SamplingRow r{1.f, 0, 1.f, 0.f, uint64_t(rng.integer(0, 1 << 30)), 0};
  std::vector<int> alone, varied;
  for (uint64_t step = 0; step < 40; ++step) {
    r.step = step;
    alone.push_back(sample(one, {r}).first[0]);
  }
  // The same row among others (different seeds, different logits) draws the same tokens.
  Tensor three = random_tensor(rng, DType::F32, Shape{3, V}, -2, 2);
  std::copy_n(one.ptr<float>(), V, three.ptr<float>() + V);
  for (uint64_t step = 0; step < 40; ++step) {
    r.step = step;
    SamplingRow other{0.7f, 5, 0.9f, 0.f, 99, step};
    EXPECT_EQ(sample(three, {other, r, other}).first[1], alone[step]) << "step " << step;
  }
  std::map<int, int> distinct;
  for (int t : alone) distinct[t]++;
  EXPECT_GT(distinct.size(), 5u) << "different steps must draw different tokens";
}

TEST_F(CpuSampling, TemperatureSamplingFollowsTheSoftmax) {
  SCOPED_TRACE(rng.trace());
  const int V = 6, N = 20000;
  Tensor l = random_tensor(rng, DType::F32, Shape{1, V}, -1.5f, 1.5f);
  const float temp = 0.8f;
  std::vector<double> p(static_cast<size_t>(V));
  double s = 0;
  for (int v = 0; v < V; ++v) s += (p[size_t(v)] = std::exp(value(l, v) / temp));
  for (double& x : p) x /= s;
  // Many rows in one call: row i uses step i.
  Tensor many = host_tensor(DType::F32, Shape{N, V});
  std::vector<SamplingRow> rows;
  for (int i = 0; i < N; ++i) {
    std::copy_n(l.ptr<float>(), V, many.ptr<float>() + int64_t(i) * V);
    rows.push_back(SamplingRow{temp, 0, 1.f, 0.f, 1234, uint64_t(i)});
  }
  auto [ids, lp] = sample(many, rows);
  std::vector<int> count(static_cast<size_t>(V));
  for (int t : ids) count[size_t(t)]++;
  for (int v = 0; v < V; ++v) {
    const double f = double(count[size_t(v)]) / N, sd = std::sqrt(p[size_t(v)] * (1 - p[size_t(v)]) / N);
    EXPECT_NEAR(f, p[size_t(v)], 5 * sd + 1e-3) << "token " << v;
  }
  // The reported logprob is under the raw logits (temperature 1, unfiltered).
  for (int i = 0; i < 10; ++i) EXPECT_NEAR(lp[size_t(i)], log_softmax_ref(l, 0, V, ids[size_t(i)]), 1e-5);
}

TEST_F(CpuSampling, FiltersNeverLetAFilteredTokenThrough) {
  SCOPED_TRACE(rng.trace());
  const int V = rng.integer(20, 200), N = 400;
  Tensor l = random_tensor(rng, DType::F32, Shape{1, V}, -3, 3);
  std::vector<int> order(static_cast<size_t>(V));
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int a, int b) { return value(l, a) > value(l, b); });
  std::vector<double> p(static_cast<size_t>(V));
  double s = 0;
  for (int v = 0; v < V; ++v) s += (p[size_t(v)] = std::exp(value(l, v)));
  for (double& x : p) x /= s;

  auto draw_all = [&](SamplingRow r) {
    Tensor many = host_tensor(DType::F32, Shape{N, V});
    std::vector<SamplingRow> rows;
    for (int i = 0; i < N; ++i) {
      std::copy_n(l.ptr<float>(), V, many.ptr<float>() + int64_t(i) * V);
      r.step = uint64_t(i);
      rows.push_back(r);
    }
    return sample(many, rows).first;
  };

  const int k = rng.integer(1, 5);
  std::set<int> top_k(order.begin(), order.begin() + k);
  std::set<int> seen_k;
  for (int t : draw_all(SamplingRow{1.f, k, 1.f, 0.f, 7, 0})) {
    EXPECT_TRUE(top_k.count(t)) << "top_k=" << k << " drew token " << t;
    seen_k.insert(t);
  }
  if (k > 1) EXPECT_GT(seen_k.size(), 1u);

  const float top_p = rng.uniform(0.2f, 0.9f);
  std::set<int> nucleus;
  double cum = 0;
  for (int t : order) {
    nucleus.insert(t);
    cum += p[size_t(t)];
    if (cum >= top_p) break;
  }
  for (int t : draw_all(SamplingRow{1.f, 0, top_p, 0.f, 8, 0}))
    EXPECT_TRUE(nucleus.count(t)) << "top_p=" << top_p << " drew token " << t;

  const float min_p = rng.uniform(0.05f, 0.5f);
  const double pmax = p[size_t(order[0])];
  for (int t : draw_all(SamplingRow{1.f, 0, 1.f, min_p, 9, 0}))
    EXPECT_GE(p[size_t(t)], min_p * pmax * (1 - 1e-5)) << "min_p=" << min_p << " drew token " << t;
}

LogitAdjustToken adjust_token(int token, float bias, bool banned, bool repeated, int count) {
  LogitAdjustToken t;
  t.token = token, t.bias = bias, t.banned = banned, t.repeated = repeated, t.count = count;
  return t;
}

TEST_F(CpuSampling, AdjustLogitsPresenceAndFrequency) {
  SCOPED_TRACE(rng.trace());
  const int V = 50;
  Tensor l = random_tensor(rng, DType::F32, Shape{2, V}, -2, 2);
  std::vector<float> before(l.ptr<float>(), l.ptr<float>() + 2 * V);
  std::vector<LogitAdjustRow> rows(2);
  rows[0].presence_penalty = 0.5f, rows[0].frequency_penalty = 0.25f;
  rows[0].tokens = {adjust_token(3, 0, false, false, 2), adjust_token(7, 0, false, false, 1)};
  be->adjust_logits(l, rows);
  EXPECT_FLOAT_EQ(l.ptr<float>()[3], before[3] - 0.5f - 0.5f);
  EXPECT_FLOAT_EQ(l.ptr<float>()[7], before[7] - 0.5f - 0.25f);
  for (int v = 0; v < V; ++v) EXPECT_EQ(l.ptr<float>()[V + v], before[size_t(V + v)]) << "row 1 has nothing to adjust";
  rows[0].tokens = {adjust_token(V, 0, false, false, 1)};
  EXPECT_THROW(be->adjust_logits(l, rows), Error);
  EXPECT_THROW(be->adjust_logits(l, {LogitAdjustRow{}}), Error);  // one row for two
}

// vLLM's order: bias, then bans, then the repetition penalty (divide a positive logit, multiply a
// negative one) over prompt and output tokens, then presence/frequency.
TEST_F(CpuSampling, AdjustLogitsRunsBiasBanRepetitionPenaltiesInOrder) {
  const int V = 12;
  std::vector<float> init = {2.f, -2.f, 1.f, -1.f, 0.5f, 3.f, -3.f, 4.f, 0.f, 1.5f, -0.5f, 6.f};
  Tensor l = host_tensor(DType::F32, Shape{1, V});
  std::copy(init.begin(), init.end(), l.ptr<float>());
  LogitAdjustRow row;
  row.repetition_penalty = 2.f;
  row.presence_penalty = 0.5f;
  row.frequency_penalty = 0.1f;
  row.prompt_set = be->upload_token_set({0, 1, 4});  // the prompt's distinct tokens
  row.tokens = {
      adjust_token(4, -1.f, false, false, 0),  // prompt token biased below 0: -0.5 then ·2
      adjust_token(2, 0.f, false, true, 3),    // generated 3 times: 1/2, then - 0.5 - 0.3
      adjust_token(3, 0.f, false, true, 1),    // generated once, negative: -1·2 - 0.6
      adjust_token(5, 0.f, true, false, 0),    // banned (min_tokens)
      adjust_token(7, -5.f, false, false, 0),  // bias only
      adjust_token(0, 0.f, false, false, 2),   // prompt and output: one repetition, then - 0.7
  };
  be->adjust_logits(l, {row});
  const float* out = l.ptr<float>();
  EXPECT_FLOAT_EQ(out[0], 2.f / 2 - (0.5f + 0.1f * 2));
  EXPECT_FLOAT_EQ(out[1], -2.f * 2);
  EXPECT_FLOAT_EQ(out[2], 1.f / 2 - (0.5f + 0.1f * 3));
  EXPECT_FLOAT_EQ(out[3], -1.f * 2 - (0.5f + 0.1f));
  EXPECT_FLOAT_EQ(out[4], (0.5f - 1.f) * 2);
  EXPECT_EQ(out[5], -INFINITY);
  EXPECT_FLOAT_EQ(out[7], 4.f - 5.f);
  for (int v : {6, 8, 9, 10, 11}) EXPECT_EQ(out[v], init[size_t(v)]) << "token " << v << " is untouched";

  // A penalty near 0 saturates a positive logit at FLT_MAX instead of +inf (no NaN in the softmax).
  std::copy(init.begin(), init.end(), l.ptr<float>());
  row = LogitAdjustRow{};
  row.repetition_penalty = 1e-38f;
  row.tokens = {adjust_token(11, 0.f, false, true, 1)};
  be->adjust_logits(l, {row});
  EXPECT_EQ(out[11], FLT_MAX);
}

TEST_F(CpuSampling, TopLogprobs) {
  SCOPED_TRACE(rng.trace());
  const int V = 50;
  Tensor l = random_tensor(rng, DType::F32, Shape{2, V}, -2, 2);

  const int n = 5;
  Tensor ids = host_tensor(DType::I32, Shape{2, n});
  Tensor lp = poisoned(Shape{2, n});
  be->top_logprobs(l, n, ids, lp);
  for (int r = 0; r < 2; ++r) {
    std::vector<int> order(static_cast<size_t>(V));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return l.ptr<float>()[r * V + a] > l.ptr<float>()[r * V + b]; });
    for (int j = 0; j < n; ++j) {
      EXPECT_EQ(ids.ptr<int>()[r * n + j], order[size_t(j)]);
      EXPECT_NEAR(lp.ptr<float>()[r * n + j], log_softmax_ref(l, r, V, order[size_t(j)]), 1e-5);
    }
  }
}

TEST(SamplingRng, UniformIsOpenIntervalAndUnbiased) {
  double sum = 0;
  for (uint64_t i = 0; i < 100000; ++i) {
    const float u = rng::uniform(5, 6, i);
    ASSERT_GT(u, 0.f);
    ASSERT_LT(u, 1.f);
    ASSERT_TRUE(std::isfinite(rng::gumbel(u)));
    sum += u;
  }
  EXPECT_NEAR(sum / 100000, 0.5, 0.005);
  EXPECT_NE(rng::uniform(1, 0, 0), rng::uniform(2, 0, 0));
  EXPECT_NE(rng::uniform(1, 0, 0), rng::uniform(1, 1, 0));
  EXPECT_NE(rng::uniform(1, 0, 0), rng::uniform(1, 0, 1));
}

}  // namespace
}  // namespace gs::test
