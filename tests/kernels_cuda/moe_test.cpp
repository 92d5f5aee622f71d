// cuda vs cpu MoE: the router (same experts chosen, same weights) and the expert FFNs over ragged
// expert loads (some experts empty, some with more rows than one GEMM tile).
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "backend_harness.h"

namespace gs::test {
namespace {

class Moe : public CudaVsCpu {};

TEST_F(Moe, RouteChoosesTheSameExperts) {
  for (int64_t T : {1, 9}) {
    const int64_t H = 136, E = 16;
    const int k = 4;
    auto r = random_bf16(T * H, -3.f, 3.f);
    auto [sc, sg] = weight(random_bf16(H, 0.5f, 1.5f), Shape{H});
    auto [pc, pg] = weight(random_bf16(E * H), Shape{E, H});
    auto [ec, eg] = weight(random_bf16(E, 0.5f, 2.f), Shape{E});
    const float in_scale = 1.f / std::sqrt(float(H));
    Tensor ic = cpu->empty(DType::I32, {T, k}), wc = cpu->empty(DType::F32, {T, k});
    Tensor ig = gpu_poisoned(DType::I32, {T, k}), wg = gpu_poisoned(DType::F32, {T, k});
    cpu->moe_route(cpu_act(r, {T, H}), sc, pc, ec, in_scale, 1e-6f, k, ic, wc);
    gpu->moe_route(gpu_act(r, {T, H}), sg, pg, eg, in_scale, 1e-6f, k, ig, wg);
    // Random inputs make near-ties (probabilities within f32 rounding) vanishingly rare.
    EXPECT_EQ(download_ints(*gpu, ig), download_ints(*cpu, ic)) << "seed " << seed;
    expect_close(wg, wc, 1e-4, "router weights");
  }
}

TEST_F(Moe, ExpertsOverRaggedLoads) {
  const int64_t T = 70, H = 64, E = 8, I = 48;
  const int k = 3;
  // Expert 5 gets no token; expert 0 gets every token (70 rows: more than one 64-row tile).
  std::vector<int> ids;
  for (int64_t t = 0; t < T; ++t) {
    std::vector<int> others{1, 2, 3, 4, 6, 7};
    std::shuffle(others.begin(), others.end(), rng);
    ids.push_back(0), ids.push_back(others[0]), ids.push_back(others[1]);
    std::shuffle(ids.end() - k, ids.end(), rng);
  }
  auto w = random_bf16(T * k, 0.1f, 1.f);
  auto x = random_bf16(T * H, -2.f, 2.f);
  auto [guc, gug] = weight(random_bf16(E * 2 * I * H, -0.3f, 0.3f), Shape{E, 2 * I, H});
  auto [dc, dg] = weight(random_bf16(E * H * I, -0.3f, 0.3f), Shape{E, H, I});
  Tensor oc = cpu->empty(DType::F32, {T, H}), og = gpu_poisoned(DType::BF16, {T, H});
  cpu->moe_experts(cpu_act(x, {T, H}), cpu_ints(ids, {T, k}), cpu_tensor(w, {T, k}), guc, dc, oc);
  gpu->moe_experts(gpu_act(x, {T, H}), gpu_ints(ids, {T, k}), gpu_tensor(w, DType::F32, {T, k}), gug, dg, og);
  expect_close(og, oc, 2e-2, "moe_experts");

  // Decode shape: one token, and the scratch sized above is reused.
  Tensor oc1 = cpu->empty(DType::F32, {1, H}), og1 = gpu_poisoned(DType::BF16, {1, H});
  std::vector<int> ids1(ids.begin(), ids.begin() + k);
  std::vector<float> w1(w.begin(), w.begin() + k), x1(x.begin(), x.begin() + H);
  cpu->moe_experts(cpu_act(x1, {1, H}), cpu_ints(ids1, {1, k}), cpu_tensor(w1, {1, k}), guc, dc, oc1);
  gpu->moe_experts(gpu_act(x1, {1, H}), gpu_ints(ids1, {1, k}), gpu_tensor(w1, DType::F32, {1, k}), gug, dg, og1);
  expect_close(og1, oc1, 2e-2, "moe_experts decode");
}

}  // namespace
}  // namespace gs::test
