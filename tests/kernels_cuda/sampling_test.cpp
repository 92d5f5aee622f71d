// cuda vs cpu sampling: with the shared counter-based generator, a seeded row must draw exactly the
// cpu backend's token for every filter combination; logprobs, top_logprobs and penalties match.
#include <gtest/gtest.h>

#include "backend_harness.h"
#include "core/error.h"

namespace gs::test {
namespace {

class Sampling : public CudaVsCpu {
 protected:
  // Logits with a realistic shape: a few strong tokens over a broad noisy floor.
  std::vector<float> logits(int64_t rows, int64_t vocab) {
    std::normal_distribution<float> n(0.f, 2.f);
    std::uniform_int_distribution<int64_t> pick(0, vocab - 1);
    std::vector<float> v(size_t(rows * vocab));
    for (auto& x : v) x = n(rng);
    for (int64_t r = 0; r < rows; ++r)
      for (int j = 0; j < 20; ++j) v[size_t(r * vocab + pick(rng))] += 8.f;
    return v;
  }
  // Both backends sample the rows of `l` ([rows.size(), V]): the same ids, logprobs within 1e-4.
  void expect_same_as_cpu(const std::vector<float>& l, const std::vector<SamplingRow>& rows, int64_t V,
                          const std::string& what) {
    const int64_t R = int64_t(rows.size());
    Tensor lc = cpu_tensor(l, {R, V}), lg = gpu_tensor(l, DType::F32, {R, V});
    Tensor ic = cpu->empty(DType::I32, {R}), pc = cpu->empty(DType::F32, {R});
    Tensor ig = gpu_poisoned(DType::I32, {R}), pg = gpu_poisoned(DType::F32, {R});
    cpu->sample(lc, rows, ic, pc);
    gpu->sample(lg, rows, ig, pg);
    EXPECT_EQ(download_ints(*gpu, ig), download_ints(*cpu, ic)) << what << " seed " << seed;
    auto a = download(*gpu, pg), b = download(*cpu, pc);
    for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-4) << "logprob row " << i << " " << what;
  }
};

TEST_F(Sampling, SameTokensAsCpuForEveryFilter) {
  std::vector<SamplingRow> rows;
  auto row = [&](float temp, int k, float p, float mp) {
    SamplingRow s;
    s.temperature = temp, s.top_k = k, s.top_p = p, s.min_p = mp;
    s.seed = rng(), s.step = rng() % 1000;
    rows.push_back(s);
  };
  row(0.f, 0, 1.f, 0.f);      // greedy
  row(1.f, 0, 1.f, 0.f);      // plain
  row(0.7f, 50, 1.f, 0.f);    // top-k
  row(1.3f, 0, 0.9f, 0.f);    // top-p
  row(1.f, 0, 1.f, 0.05f);    // min-p
  row(0.8f, 64, 0.95f, 0.02f);
  row(2.f, 1, 1.f, 0.f);      // top-1 = greedy on z
  row(1.f, 0, 0.3f, 0.f);
  for (int64_t V : {1000, 262144}) {
    for (int round = 0; round < 3; ++round) {
      for (auto& r : rows) r.seed = rng(), r.step = rng() % 1000;
      const int64_t R = int64_t(rows.size());
      expect_same_as_cpu(logits(R, V), rows, V, "V=" + std::to_string(V));
    }
  }
}

// The row statistics are taken over slices of the row by many blocks (sampling.cu): ties across
// slices go to the lowest id, slices of -inf logits take no part, at one row (64 slices) and three.
TEST_F(Sampling, GreedyAcrossSlices) {
  const int64_t V = 262144;
  for (int64_t R : {1, 3}) {
    auto l = logits(R, V);
    for (int64_t r = 0; r < R; ++r) {
      float* row = l.data() + r * V;
      row[200000 - r] = row[70000 + r] = 60.f;  // a tie in different slices
      if (r == 1)
        for (int64_t i = 0; i < V / 2; ++i) row[i] = -INFINITY;  // the first half masked
    }
    expect_same_as_cpu(l, std::vector<SamplingRow>(static_cast<size_t>(R)), V, "R=" + std::to_string(R));  // greedy
  }
}

TEST_F(Sampling, TopLogprobs) {
  for (int n : {1, 5, 20}) {
    const int64_t R = 3, V = 5000;
    auto l = logits(R, V);
    Tensor ic = cpu->empty(DType::I32, {R, n}), pc = cpu->empty(DType::F32, {R, n});
    Tensor ig = gpu_poisoned(DType::I32, {R, n}), pg = gpu_poisoned(DType::F32, {R, n});
    cpu->top_logprobs(cpu_tensor(l, {R, V}), n, ic, pc);
    gpu->top_logprobs(gpu_tensor(l, DType::F32, {R, V}), n, ig, pg);
    EXPECT_EQ(download_ints(*gpu, ig), download_ints(*cpu, ic)) << "n=" << n << " seed " << seed;
    auto a = download(*gpu, pg), b = download(*cpu, pc);
    for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-4);
  }
  Tensor l = gpu->empty(DType::F32, {1, 10}), i = gpu->empty(DType::I32, {1, 11}), p = gpu->empty(DType::F32, {1, 11});
  EXPECT_THROW(gpu->top_logprobs(l, 11, i, p), Error);  // n above the vocabulary
}

TEST_F(Sampling, PenaltiesMatchCpu) {
  const int64_t R = 3, V = 300;
  auto l = logits(R, V);
  std::vector<std::vector<std::pair<int, int>>> counts(R);
  for (int64_t r = 0; r < R; ++r)
    for (int t : random_ints(10, 0, int(V) - 1)) counts[size_t(r)].push_back({t + 0, 0});
  for (int64_t r = 0; r < R; ++r) {  // distinct tokens per row, counts 0..4
    std::sort(counts[size_t(r)].begin(), counts[size_t(r)].end());
    counts[size_t(r)].erase(std::unique(counts[size_t(r)].begin(), counts[size_t(r)].end()), counts[size_t(r)].end());
    for (auto& [tok, n] : counts[size_t(r)]) n = random_ints(1, 0, 4)[0];
  }
  std::vector<float> presence{0.5f, 0.f, 1.5f}, frequency{0.25f, 0.7f, 0.f};
  Tensor lc = cpu_tensor(l, {R, V}), lg = gpu_tensor(l, DType::F32, {R, V});
  cpu->apply_penalties(lc, counts, presence, frequency);
  gpu->apply_penalties(lg, counts, presence, frequency);
  EXPECT_EQ(download(*gpu, lg), download(*cpu, lc));
  counts[0].push_back({int(V), 1});
  EXPECT_THROW(gpu->apply_penalties(lg, counts, presence, frequency), Error);
}

}  // namespace
}  // namespace gs::test
