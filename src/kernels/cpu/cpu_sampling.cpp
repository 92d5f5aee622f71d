// Sampling from logits rows (sampling_rng.h defines the procedure every backend follows),
// the logit adjustments before it (bias, bans, repetition/presence/frequency penalties) and top-n
// log-probabilities.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "kernels/cpu/cpu_ops.h"
#include "ops/logit_adjust.h"
#include "ops/sampling_rng.h"

namespace gs::cpu {

namespace {

// log Σ exp(x) over a row, in double.
double log_sum_exp(const float* x, int64_t n) {
  float mx = -INFINITY;
  for (int64_t i = 0; i < n; ++i) mx = std::max(mx, x[i]);
  if (mx == -INFINITY) return -INFINITY;
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += std::exp(double(x[i]) - mx);
  return mx + std::log(s);
}

int argmax_lowest(const float* x, int64_t n) {
  int best = 0;
  for (int64_t i = 1; i < n; ++i)
    if (x[i] > x[best]) best = int(i);
  return best;
}

// Marks which tokens survive top_k, then top_p, then min_p (the order of the reference's logits
// warpers), each applied to the distribution softmax(z) renormalised over what is left.
void filter(const float* z, int64_t V, const SamplingRow& row, std::vector<int>& kept) {
  kept.resize(size_t(V));
  std::iota(kept.begin(), kept.end(), 0);
  auto by_value = [&](int a, int b) { return z[a] != z[b] ? z[a] > z[b] : a < b; };
  bool sorted = false;
  if (row.top_k > 0 && row.top_k < V) {
    std::partial_sort(kept.begin(), kept.begin() + row.top_k, kept.end(), by_value);
    kept.resize(size_t(row.top_k));
    sorted = true;
  }
  if (row.top_p < 1.f) {
    if (!sorted) std::sort(kept.begin(), kept.end(), by_value);
    sorted = true;
    const float mx = z[kept[0]];
    double total = 0;
    for (int t : kept) total += std::exp(double(z[t]) - mx);
    // Smallest prefix (in descending probability) whose mass reaches top_p; at least one token.
    double cum = 0;
    size_t n = 0;
    while (n < kept.size()) {
      cum += std::exp(double(z[kept[n]]) - mx) / total;
      ++n;
      if (cum >= double(row.top_p)) break;
    }
    kept.resize(n);
  }
  if (row.min_p > 0.f) {
    float mx = -INFINITY;
    for (int t : kept) mx = std::max(mx, z[t]);
    // p_t >= min_p · p_max  <=>  z_t >= z_max + log(min_p)
    const double threshold = double(mx) + std::log(double(row.min_p));
    kept.erase(std::remove_if(kept.begin(), kept.end(), [&](int t) { return double(z[t]) < threshold; }), kept.end());
  }
}

}  // namespace

void sample(ThreadPool& pool, const Tensor& logits, const std::vector<SamplingRow>& rows, const Tensor& out_ids,
            const Tensor& out_logprobs) {
  check_f32("sample", logits, "logits");
  check_i32("sample", out_ids, "out_ids");
  check_f32("sample", out_logprobs, "out_logprobs");
  const int64_t R = logits.rows(), V = logits.cols();
  GS_CHECK(int64_t(rows.size()) == R && out_ids.numel() == R && out_logprobs.numel() == R,
           "cpu sample: {} logits rows, {} sampling rows, {} ids, {} logprobs", R, rows.size(), out_ids.numel(),
           out_logprobs.numel());
  pool.parallel_for(R, 1, [&](int64_t r0, int64_t r1) {
    thread_local std::vector<int> kept;
    for (int64_t r = r0; r < r1; ++r) {
      const float* l = logits.ptr<const float>() + r * V;
      const SamplingRow& row = rows[size_t(r)];
      int chosen;
      if (row.temperature <= 0.f) {
        chosen = argmax_lowest(l, V);
      } else {
        float* z = thread_scratch(size_t(V));
        for (int64_t i = 0; i < V; ++i) z[i] = l[i] / row.temperature;
        filter(z, V, row, kept);
        chosen = -1;
        float best = -INFINITY;
        std::sort(kept.begin(), kept.end());  // ascending ids: ties go to the lowest
        for (int t : kept) {
          const float g = z[t] + rng::gumbel(rng::uniform(row.seed, row.step, uint64_t(t)));
          if (chosen < 0 || g > best) {
            best = g;
            chosen = t;
          }
        }
        if (chosen < 0) chosen = argmax_lowest(l, V);  // every logit was -inf
      }
      out_ids.ptr<int>()[r] = chosen;
      out_logprobs.ptr<float>()[r] = float(double(l[chosen]) - log_sum_exp(l, V));
    }
  });
}

void adjust_logits(const Tensor& logits, const std::vector<LogitAdjustRow>& rows) {
  check_f32("adjust_logits", logits, "logits");
  const int64_t R = logits.rows(), V = logits.cols();
  GS_CHECK(int64_t(rows.size()) == R, "cpu adjust_logits: {} logits rows but {} adjustment rows", R, rows.size());
  for (int64_t r = 0; r < R; ++r) {
    const LogitAdjustRow& a = rows[size_t(r)];
    float* l = logits.ptr<float>() + r * V;
    for (const LogitAdjustToken& t : a.tokens) {
      GS_CHECK(t.token >= 0 && t.token < V, "cpu adjust_logits: token {} outside the vocabulary [0, {})", t.token, V);
      l[t.token] += t.bias;
      if (t.banned) l[t.token] = -INFINITY;
    }
    if (a.repetition_penalty != 1.f) {
      auto repeat = [&](int tok) { l[tok] = repetition_penalized(l[tok], a.repetition_penalty); };
      if (a.prompt_set.defined()) {
        const int* ids = a.prompt_set.ptr<const int>();
        for (int64_t i = 0; i < a.prompt_set.numel(); ++i) {
          GS_CHECK(ids[i] >= 0 && ids[i] < V, "cpu adjust_logits: prompt token {} outside the vocabulary [0, {})",
                   ids[i], V);
          repeat(ids[i]);
        }
      }
      for (const LogitAdjustToken& t : a.tokens)
        if (t.repeated) repeat(t.token);
    }
    for (const LogitAdjustToken& t : a.tokens)
      if (t.count > 0) l[t.token] -= penalty_delta(a, t.count);
  }
}

void top_logprobs(ThreadPool& pool, const Tensor& logits, int n, const Tensor& ids, const Tensor& logprobs) {
  check_f32("top_logprobs", logits, "logits");
  check_i32("top_logprobs", ids, "ids");
  check_f32("top_logprobs", logprobs, "logprobs");
  const int64_t R = logits.rows(), V = logits.cols();
  GS_CHECK(n >= 1 && n <= V, "cpu top_logprobs: n = {} outside [1, {}]", n, V);
  GS_CHECK(ids.rows() == R && ids.cols() == n && logprobs.rows() == R && logprobs.cols() == n,
           "cpu top_logprobs: ids {} / logprobs {} must be [{}, {}]", ids.str(), logprobs.str(), R, n);
  pool.parallel_for(R, 1, [&](int64_t r0, int64_t r1) {
    thread_local std::vector<int> order;
    for (int64_t r = r0; r < r1; ++r) {
      const float* l = logits.ptr<const float>() + r * V;
      const double lse = log_sum_exp(l, V);
      order.resize(size_t(V));
      std::iota(order.begin(), order.end(), 0);
      std::partial_sort(order.begin(), order.begin() + n, order.end(),
                        [&](int a, int b) { return l[a] != l[b] ? l[a] > l[b] : a < b; });
      for (int j = 0; j < n; ++j) {
        ids.ptr<int>()[r * n + j] = order[size_t(j)];
        logprobs.ptr<float>()[r * n + j] = float(double(l[order[size_t(j)]]) - lse);
      }
    }
  });
}

}  // namespace gs::cpu
