// Speculative verification (engine/speculative_verify.h): the acceptance rule, and a statistical
// check that rounds verified with the backend's own sampler emit tokens distributed exactly as the
// target's samples: the first token as p_0, the token after an accepted draft as p_1, the bonus
// after two accepted drafts as p_2, with top-k / top-p / min-p processing applied as decode does.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "core/error.h"
#include "engine/speculative_verify.h"
#include "kernels/cpu/cpu_backend.h"

namespace gs {
namespace {

TEST(VerifyDrafts, AcceptsWhileTheTargetAgrees) {
  DraftVerdict all = verify_drafts({5, 6, 7}, {5, 6, 7, 9});
  EXPECT_EQ(all.accepted, 3);
  EXPECT_EQ(all.tokens, (std::vector<int>{5, 6, 7, 9}));  // three drafts and the bonus
  DraftVerdict first = verify_drafts({5, 6, 7}, {4, 6, 7, 9});
  EXPECT_EQ(first.accepted, 0);
  EXPECT_EQ(first.tokens, (std::vector<int>{4}));  // the target's correction only
  DraftVerdict middle = verify_drafts({5, 6, 7}, {5, 8, 7, 9});
  EXPECT_EQ(middle.accepted, 1);
  EXPECT_EQ(middle.tokens, (std::vector<int>{5, 8}));  // later rows never count after a rejection
  DraftVerdict none = verify_drafts({}, {3});
  EXPECT_EQ(none.tokens, (std::vector<int>{3}));  // K = 0 is an ordinary decode
  EXPECT_THROW(verify_drafts({1, 2}, {1, 2}), Error);
}

TEST(VerifyDrafts, ForcedDraftsPassWhateverTheTargetSays) {
  // The benchmark switch: forced drafts pass, the first unforced mismatch still stops the round.
  EXPECT_EQ(verify_drafts_forced({5, 6, 7}, {1, 2, 3, 9}, {true, true, true}).tokens, (std::vector<int>{5, 6, 7, 9}));
  DraftVerdict v = verify_drafts_forced({5, 6, 7}, {1, 2, 3, 9}, {true, false, true});
  EXPECT_EQ(v.accepted, 1);
  EXPECT_EQ(v.tokens, (std::vector<int>{5, 2}));
  EXPECT_THROW(verify_drafts_forced({5}, {1, 2}, {}), Error);
}

// softmax(l / T) after top_k, then top_p (the smallest prefix by probability reaching p), then
// min_p, renormalised: the distribution the sampler draws from.
std::vector<double> processed(const std::vector<float>& l, float T, int top_k, float top_p, float min_p) {
  const int V = int(l.size());
  std::vector<int> order(static_cast<size_t>(V));
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int a, int b) { return l[a] != l[b] ? l[a] > l[b] : a < b; });
  if (top_k > 0 && top_k < V) order.resize(size_t(top_k));
  auto weights = [&](const std::vector<int>& keep) {
    std::vector<double> w(static_cast<size_t>(V), 0.0);
    double total = 0;
    for (int t : keep) total += w[size_t(t)] = std::exp(double(l[t] - l[keep[0]]) / T);
    for (double& x : w) x /= total;
    return w;
  };
  std::vector<double> w = weights(order);
  double cum = 0;
  size_t n = 0;
  while (n < order.size()) {
    cum += w[size_t(order[n++])];
    if (cum >= top_p) break;
  }
  order.resize(n);
  w = weights(order);
  const double pmax = w[size_t(order[0])];
  order.erase(std::remove_if(order.begin(), order.end(), [&](int t) { return w[size_t(t)] < min_p * pmax; }),
              order.end());
  return weights(order);
}

TEST(VerifyDrafts, EmittedTokensFollowTheTargetDistribution) {
  constexpr int V = 8, K = 2, N = 60000;
  constexpr float T = 0.9f, top_p = 0.95f, min_p = 0.02f;
  constexpr int top_k = 6;
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.f, 1.2f);
  std::vector<std::vector<float>> rows(K + 1, std::vector<float>(V));
  for (auto& r : rows)
    for (float& x : r) x = normal(rng);
  std::vector<std::vector<double>> p;
  for (const auto& r : rows) p.push_back(processed(r, T, top_k, top_p, min_p));
  // Drafts the target often, but not always, agrees with: each row's most likely token.
  const std::vector<int> drafts = {int(std::max_element(p[0].begin(), p[0].end()) - p[0].begin()),
                                   int(std::max_element(p[1].begin(), p[1].end()) - p[1].begin())};

  // N rounds in one batch: round n's rows draw with seed n and step = the token index, as a
  // request's decode steps would.
  auto be = make_cpu_backend(2);
  Tensor logits = be->empty(DType::F32, Shape{int64_t(N) * (K + 1), V});
  std::vector<float> host(size_t(N) * (K + 1) * V);
  std::vector<SamplingRow> srows;
  for (int n = 0; n < N; ++n)
    for (int i = 0; i <= K; ++i) {
      std::copy(rows[size_t(i)].begin(), rows[size_t(i)].end(), host.begin() + (size_t(n) * (K + 1) + i) * V);
      srows.push_back(SamplingRow{T, top_k, top_p, min_p, uint64_t(n) + 1, uint64_t(i)});
    }
  be->copy_from_host(logits, host.data());
  Tensor ids = be->empty(DType::I32, Shape{int64_t(N) * (K + 1)});
  Tensor lps = be->empty(DType::F32, Shape{int64_t(N) * (K + 1)});
  be->sample(logits, srows, ids, lps);
  std::vector<int> sampled(size_t(N) * (K + 1));
  be->copy_to_host(ids, sampled.data());

  std::vector<double> first(V, 0), after_one(V, 0), bonus(V, 0);
  double accepted_one = 0, accepted_two = 0;
  for (int n = 0; n < N; ++n) {
    const std::vector<int> s(sampled.begin() + size_t(n) * (K + 1), sampled.begin() + size_t(n + 1) * (K + 1));
    const DraftVerdict v = verify_drafts(drafts, s);
    first[size_t(v.tokens[0])] += 1;
    if (v.accepted >= 1) {
      accepted_one += 1;
      after_one[size_t(v.tokens[1])] += 1;
    }
    if (v.accepted == 2) {
      accepted_two += 1;
      bonus[size_t(v.tokens[2])] += 1;
    }
  }
  // Each observed frequency within 5 standard errors of the target's probability.
  auto expect_distribution = [](const std::vector<double>& counts, double total, const std::vector<double>& want,
                                const char* what) {
    ASSERT_GT(total, 1000) << what;
    for (size_t t = 0; t < want.size(); ++t) {
      const double f = counts[t] / total, se = std::sqrt(std::max(want[t] * (1 - want[t]), 1e-12) / total);
      EXPECT_NEAR(f, want[t], 5 * se + 1e-12) << what << ", token " << t;
    }
  };
  expect_distribution(first, N, p[0], "first emitted token");
  expect_distribution(after_one, accepted_one, p[1], "token after an accepted draft");
  expect_distribution(bonus, accepted_two, p[2], "bonus token");
  const double p_one = p[0][size_t(drafts[0])], p_two = p_one * p[1][size_t(drafts[1])];
  EXPECT_NEAR(accepted_one / N, p_one, 5 * std::sqrt(p_one * (1 - p_one) / N));
  EXPECT_NEAR(accepted_two / N, p_two, 5 * std::sqrt(p_two * (1 - p_two) / N));
  // Tokens the processing removed are never emitted.
  for (int t = 0; t < V; ++t)
    if (p[0][size_t(t)] == 0) EXPECT_EQ(first[size_t(t)], 0) << "token " << t;
}

// Greedy rounds emit the target's argmax chain: speculation cannot change greedy output.
TEST(VerifyDrafts, GreedyRoundsEmitTheArgmaxChain) {
  auto be = make_cpu_backend(1);
  const std::vector<float> host = {0.1f, 2.f, 0.3f, /**/ 1.f, 0.f, 3.f, /**/ 5.f, 1.f, 0.f};
  Tensor logits = be->empty(DType::F32, Shape{3, 3});
  be->copy_from_host(logits, host.data());
  Tensor ids = be->empty(DType::I32, Shape{3}), lps = be->empty(DType::F32, Shape{3});
  be->sample(logits, std::vector<SamplingRow>(3), ids, lps);
  std::vector<int> s(3);
  be->copy_to_host(ids, s.data());
  EXPECT_EQ(verify_drafts({1, 2}, s).tokens, (std::vector<int>{1, 2, 0}));
  EXPECT_EQ(verify_drafts({1, 0}, s).tokens, (std::vector<int>{1, 2}));
}

}  // namespace
}  // namespace gs
