// cuda vs cpu sampling: with the shared counter-based generator, a seeded row must draw exactly the
// cpu backend's token for every filter combination; logprobs, top_logprobs and logit adjustments
// (bias, bans, penalties) match.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iterator>
#include <string>

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
  // Both backends' top-n log-probabilities of the rows of `l` ([R, V]): the same ids, logprobs within 1e-4.
  void expect_same_top_logprobs_as_cpu(const std::vector<float>& l, int64_t R, int64_t V, int n) {
    Tensor ic = cpu->empty(DType::I32, {R, n}), pc = cpu->empty(DType::F32, {R, n});
    Tensor ig = gpu_poisoned(DType::I32, {R, n}), pg = gpu_poisoned(DType::F32, {R, n});
    cpu->top_logprobs(cpu_tensor(l, {R, V}), n, ic, pc);
    gpu->top_logprobs(gpu_tensor(l, DType::F32, {R, V}), n, ig, pg);
    EXPECT_EQ(download_ints(*gpu, ig), download_ints(*cpu, ic)) << "n=" << n << " V=" << V << " seed " << seed;
    auto a = download(*gpu, pg), b = download(*cpu, pc);
    for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-4) << "n=" << n << " V=" << V;
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

// Rows that take each way through the cuda kernel (sampling_window.cuh): a window of bins below
// bins kept whole (flat rows, where top_p keeps tens of thousands of tokens), zoomed windows (dense
// rows: the whole vocabulary within a nat), windows gathered whole over many equal values (logits
// rounded like bf16's), and the whole-row select when no window fits (every logit equal; top_k
// past the candidate cap); -inf halves and min_p on top.
TEST_F(Sampling, EveryWindowCaseSameAsCpu) {
  const int64_t V = 262144;
  std::uniform_real_distribution<float> flat(-10.f, 10.f);
  struct Case {
    const char* what;
    int shape;  // 0 flat (+-10), 1 rounded to 1/16, 2 all equal, 3 flat with the first half -inf, 4 dense (+-0.5)
    float temp;
    int k;
    float p, mp;
  };
  const Case cases[] = {
      {"flat top-p", 0, 0.8f, 0, 0.95f, 0.f},       {"flat top-p min-p", 0, 1.f, 0, 0.9f, 0.05f},
      {"flat top-p 0.5", 0, 1.2f, 0, 0.5f, 0.f},    {"flat top-k past the cap", 0, 1.f, 5000, 1.f, 0.f},
      {"flat top-k + top-p", 0, 1.f, 64, 0.95f, 0.f}, {"rounded top-k + top-p", 1, 1.f, 64, 0.95f, 0.f},
      {"rounded top-p", 1, 0.7f, 0, 0.9f, 0.f},     {"rounded top-k", 1, 1.f, 40, 1.f, 0.f},
      {"equal top-p", 2, 1.f, 0, 0.9f, 0.f},        {"equal top-k", 2, 1.f, 10, 1.f, 0.f},
      {"half -inf top-p", 3, 1.f, 0, 0.95f, 0.f},
      // Dense rows (a random-weight model's logits): the crossing bins are zoomed.
      {"dense top-p", 4, 1.f, 0, 0.95f, 0.f},
      {"dense top-p 0.5", 4, 0.9f, 0, 0.5f, 0.f},
      {"dense top-k + top-p", 4, 1.f, 64, 0.9f, 0.f},
      {"dense top-k past the cap", 4, 1.f, 5000, 1.f, 0.f},
  };
  const int64_t R = int64_t(std::size(cases));
  // Rounds 0-1: the team size launch_sample picks (8 CTAs per row for these 15 rows on an H100);
  // rounds 2-4: teams of 1, 2 and 4 (the policy's sampling.team; ignored before sm_90, where it is
  // always 1).
  const char* teams[] = {nullptr, nullptr, "1", "2", "4"};
  for (int round = 0; round < 5; ++round) {
    change_policy([&](cuda::KernelPolicy& p) { p.sampling.team = teams[round] ? std::atoi(teams[round]) : 0; });
    std::vector<float> l = logits(R, V);
    std::vector<SamplingRow> rows;
    for (int64_t r = 0; r < R; ++r) {
      const Case& c = cases[r];
      float* row = l.data() + r * V;
      for (int64_t i = 0; i < V; ++i) {
        if (c.shape == 0 || c.shape == 3) row[i] = flat(rng);
        if (c.shape == 1) row[i] = std::round(row[i] * 16.f) / 16.f;
        if (c.shape == 2) row[i] = 1.5f;
        if (c.shape == 3 && i < V / 2) row[i] = -INFINITY;
        if (c.shape == 4) row[i] = flat(rng) / 20.f;
      }
      SamplingRow s;
      s.temperature = c.temp, s.top_k = c.k, s.top_p = c.p, s.min_p = c.mp;
      s.seed = rng(), s.step = rng() % 1000;
      rows.push_back(s);
    }
    const std::string team = teams[round] ? teams[round] : "auto";
    expect_same_as_cpu(l, rows, V, "round " + std::to_string(round) + ", team " + team);
  }
}

TEST_F(Sampling, TopLogprobsOfLargeTiedRows) {
  const int64_t R = 3, V = 262144;
  auto l = logits(R, V);
  for (size_t i = 0; i < l.size(); ++i) l[i] = std::round(l[i] * 8.f) / 8.f;  // many equal values
  for (int64_t i = 0; i < V; ++i) l[size_t(2 * V + i)] = 0.25f;                // row 2: all equal (whole row)
  for (int n : {1, 20, 256}) expect_same_top_logprobs_as_cpu(l, R, V, n);
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
    expect_same_top_logprobs_as_cpu(logits(R, V), R, V, n);
  }
  Tensor l = gpu->empty(DType::F32, {1, 10}), i = gpu->empty(DType::I32, {1, 11}), p = gpu->empty(DType::F32, {1, 11});
  EXPECT_THROW(gpu->top_logprobs(l, 11, i, p), Error);  // n above the vocabulary
}

// Fresh random rows with every kind of adjustment (bias, bans, repetition over a prompt set and
// over output tokens, presence/frequency), some rows with none: the same bits as the cpu backend.
TEST_F(Sampling, AdjustLogitsMatchesCpu) {
  const int64_t R = 6, V = 5000;
  auto l = logits(R, V);
  std::uniform_real_distribution<float> unit(0.f, 1.f);
  std::vector<LogitAdjustRow> cpu_rows(R), gpu_rows(R);
  for (int64_t r = 0; r < R; ++r) {
    if (r == 2) continue;  // a row with nothing to adjust among rows that have
    LogitAdjustRow& a = cpu_rows[size_t(r)];
    a.repetition_penalty = r % 3 == 0 ? 1.f : 0.2f + 2.f * unit(rng);
    a.presence_penalty = r == 4 ? 0.f : 2.f * unit(rng) - 1.f;
    a.frequency_penalty = 2.f * unit(rng) - 1.f;
    std::vector<int> prompt = random_ints(200, 0, int(V) - 1);
    std::sort(prompt.begin(), prompt.end());
    prompt.erase(std::unique(prompt.begin(), prompt.end()), prompt.end());
    std::vector<int> toks = random_ints(300, 0, int(V) - 1);
    std::sort(toks.begin(), toks.end());
    toks.erase(std::unique(toks.begin(), toks.end()), toks.end());
    for (int t : toks) {
      LogitAdjustToken e;
      e.token = t;
      e.bias = unit(rng) < 0.3f ? 200.f * unit(rng) - 100.f : 0.f;
      e.banned = unit(rng) < 0.05f;
      e.count = unit(rng) < 0.6f ? int(1 + 5 * unit(rng)) : 0;
      e.repeated = e.count > 0 && !std::binary_search(prompt.begin(), prompt.end(), t);
      a.tokens.push_back(e);
    }
    gpu_rows[size_t(r)] = a;
    if (r != 5) {  // row 5: repetition over output tokens only
      a.prompt_set = cpu->upload_token_set(prompt);
      gpu_rows[size_t(r)].prompt_set = gpu->upload_token_set(prompt);
    }
  }
  Tensor lc = cpu_tensor(l, {R, V}), lg = gpu_tensor(l, DType::F32, {R, V});
  cpu->adjust_logits(lc, cpu_rows);
  gpu->adjust_logits(lg, gpu_rows);
  EXPECT_EQ(download(*gpu, lg), download(*cpu, lc)) << "seed " << seed;

  // Past the vocabulary: refused before anything runs.
  gpu_rows[0].tokens.push_back(LogitAdjustToken{int(V)});
  EXPECT_THROW(gpu->adjust_logits(lg, gpu_rows), Error);
}

// Adjusted logits feed sampling: a +100 bias wins greedy and seeded draws alike on both backends.
TEST_F(Sampling, BiasedTokenIsDrawnOnBothBackends) {
  const int64_t R = 2, V = 262144;
  auto l = logits(R, V);
  std::vector<LogitAdjustRow> rows(R);
  for (auto& a : rows) {
    LogitAdjustToken e;
    e.token = int(random_ints(1, 0, int(V) - 1)[0]);
    e.bias = 100.f;
    a.tokens = {e};
  }
  std::vector<SamplingRow> sampling(R);
  sampling[1].temperature = 1.f, sampling[1].seed = rng();
  Tensor lc = cpu_tensor(l, {R, V}), lg = gpu_tensor(l, DType::F32, {R, V});
  cpu->adjust_logits(lc, rows);
  gpu->adjust_logits(lg, rows);
  Tensor ic = cpu->empty(DType::I32, {R}), pc = cpu->empty(DType::F32, {R});
  Tensor ig = gpu_poisoned(DType::I32, {R}), pg = gpu_poisoned(DType::F32, {R});
  cpu->sample(lc, sampling, ic, pc);
  gpu->sample(lg, sampling, ig, pg);
  const std::vector<int> want = {rows[0].tokens[0].token, rows[1].tokens[0].token};
  EXPECT_EQ(download_ints(*cpu, ic), want);
  EXPECT_EQ(download_ints(*gpu, ig), want);
}

}  // namespace
}  // namespace gs::test
