// MoE routing and experts against a double-precision reference (gemma4-architecture.md §2.8).
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "test_util.h"

namespace gs::test {
namespace {

TEST(CpuMoe, RouteThenExpertsMatchReference) {
  Rng rng;
  SCOPED_TRACE(rng.trace());
  auto be = make_cpu_backend(3);
  const int T = rng.integer(1, 12), H = rng.integer(8, 96), E = rng.integer(2, 12), k = rng.integer(1, std::min(E, 4));
  const int I = rng.integer(4, 48);
  SCOPED_TRACE("T=" + std::to_string(T) + " H=" + std::to_string(H) + " E=" + std::to_string(E) +
               " k=" + std::to_string(k) + " I=" + std::to_string(I));
  Tensor r = random_tensor(rng, DType::F32, Shape{T, H}, -3, 3);
  Tensor scale = random_tensor(rng, DType::BF16, Shape{H}, 0.4f, 1.6f);
  Tensor proj = random_tensor(rng, DType::BF16, Shape{E, H}, -1, 1);
  Tensor per_expert = random_tensor(rng, DType::BF16, Shape{E}, 0.4f, 1.6f);
  const float in_scale = 1.0f / std::sqrt(float(H));
  Tensor ids = host_tensor(DType::I32, Shape{T, k});
  Tensor w = poisoned(Shape{T, k});
  be->moe_route(r, scale, proj, per_expert, in_scale, 1e-6f, k, ids, w);

  std::vector<std::vector<int>> want_ids(static_cast<size_t>(T));
  std::vector<double> want_w;
  for (int t = 0; t < T; ++t) {
    std::vector<double> x(static_cast<size_t>(H));
    for (int i = 0; i < H; ++i) x[size_t(i)] = value(r, int64_t(t) * H + i);
    std::vector<double> z = rms_norm_ref(x.data(), H, nullptr, 1e-6);
    std::vector<double> logit(static_cast<size_t>(E));
    for (int e = 0; e < E; ++e) {
      double s = 0;
      for (int i = 0; i < H; ++i) s += z[size_t(i)] * value(scale, i) * in_scale * value(proj, int64_t(e) * H + i);
      logit[size_t(e)] = s;
    }
    const double mx = *std::max_element(logit.begin(), logit.end());
    double sum = 0;
    for (double& l : logit) sum += (l = std::exp(l - mx));
    std::vector<int> order(static_cast<size_t>(E));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return logit[size_t(a)] > logit[size_t(b)]; });
    double top = 0;
    for (int j = 0; j < k; ++j) top += logit[size_t(order[size_t(j)])] / sum;
    for (int j = 0; j < k; ++j) {
      const int e = order[size_t(j)];
      want_ids[size_t(t)].push_back(e);
      want_w.push_back(logit[size_t(e)] / sum / top * value(per_expert, e));
    }
    // f32 may order a near-tie (probabilities within 1e-5) differently from this double reference.
    for (int j = 0; j < k; ++j) {
      const int got = ids.ptr<int>()[t * k + j], want = want_ids[size_t(t)][size_t(j)];
      if (got != want)
        EXPECT_NEAR(logit[size_t(got)] / sum, logit[size_t(want)] / sum, 1e-5) << "token " << t << " choice " << j;
    }
  }
  expect_close(w, want_w, 1e-5, 1e-4, "routing weights");

  Tensor gate_up = random_tensor(rng, DType::BF16, Shape{E, 2 * I, H}, -0.3f, 0.3f);
  Tensor down = random_tensor(rng, DType::BF16, Shape{E, H, I}, -0.3f, 0.3f);
  Tensor x = random_tensor(rng, DType::F32, Shape{T, H}, -2, 2);
  Tensor out = poisoned(Shape{T, H});
  be->moe_experts(x, ids, w, gate_up, down, out);
  std::vector<double> want_out(size_t(T) * H, 0.0);
  for (int t = 0; t < T; ++t)
    for (int j = 0; j < k; ++j) {
      const int e = ids.ptr<int>()[t * k + j];
      const double wt = value(w, t * k + j);
      std::vector<double> act(static_cast<size_t>(I));
      for (int i = 0; i < I; ++i) {
        double g = 0, u = 0;
        for (int c = 0; c < H; ++c) {
          g += value(x, int64_t(t) * H + c) * value(gate_up, (int64_t(e) * 2 * I + i) * H + c);
          u += value(x, int64_t(t) * H + c) * value(gate_up, (int64_t(e) * 2 * I + I + i) * H + c);
        }
        act[size_t(i)] = gelu_ref(g) * u;
      }
      for (int o = 0; o < H; ++o) {
        double s = 0;
        for (int i = 0; i < I; ++i) s += act[size_t(i)] * value(down, (int64_t(e) * H + o) * I + i);
        want_out[size_t(t) * H + o] += wt * s;
      }
    }
  expect_close(out, want_out, 1e-5, 1e-4, "expert mixture");
}

TEST(CpuMoe, RejectsExpertIdsOutsideTheTable) {
  auto be = make_cpu_backend(1);
  Rng rng;
  Tensor x = random_tensor(rng, DType::F32, Shape{1, 8});
  Tensor ids = host_tensor(DType::I32, Shape{1, 1});
  ids.ptr<int>()[0] = 4;
  Tensor w = random_tensor(rng, DType::F32, Shape{1, 1});
  Tensor gu = random_tensor(rng, DType::BF16, Shape{4, 6, 8}), dn = random_tensor(rng, DType::BF16, Shape{4, 8, 3});
  Tensor out = poisoned(Shape{1, 8});
  EXPECT_THROW(be->moe_experts(x, ids, w, gu, dn, out), Error);
}

}  // namespace
}  // namespace gs::test
