// cuda vs cpu MoE: the router (same experts chosen, same weights) at decode and prefill token
// counts, and the expert FFNs on each of the cuda paths (moe.h: the GEMV, the grouped GEMM in 16-
// and in 64-row tiles), forced one after the other, over ragged
// expert loads: an empty expert, an expert every token chooses (more rows than one GEMV pass or
// one GEMM tile), column counts that do not fill the last block, K slices cut short.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <string>

#include "backend_harness.h"
#include "kernels/cuda/moe.h"

namespace gs::test {
namespace {

class Moe : public CudaVsCpu {
 protected:
  void force(const char* p) {
    const std::string n = p ? p : "";
    const cuda::MoePath forced = n == "gemv"    ? cuda::MoePath::Gemv
                                 : n == "mma16" ? cuda::MoePath::Mma16
                                 : n == "mma64" ? cuda::MoePath::Mma64
                                                : cuda::MoePath::Auto;
    change_policy([&](cuda::KernelPolicy& policy) { policy.moe.path = forced; });
    path = p;
  }
  std::string path = "auto";

  void check_route(int64_t T, int64_t H, int64_t E, int k) {
    auto r = random_bf16(T * H, -3.f, 3.f);
    auto [sc, sg] = weight(random_bf16(H, 0.5f, 1.5f), Shape{H});
    auto [pc, pg] = weight(random_bf16(E * H), Shape{E, H});
    auto [ec, eg] = weight(random_bf16(E, 0.5f, 2.f), Shape{E});
    const float in_scale = 1.f / std::sqrt(float(H));
    Tensor ic = cpu->empty(DType::I32, {T, k}), wc = cpu->empty(DType::F32, {T, k});
    Tensor ig = gpu_poisoned(DType::I32, {T, k}), wg = gpu_poisoned(DType::F32, {T, k});
    cpu->moe_route(cpu_act(r, {T, H}), sc, pc, ec, in_scale, 1e-6f, k, ic, wc);
    gpu->moe_route(gpu_act(r, {T, H}), sg, pg, eg, in_scale, 1e-6f, k, ig, wg);
    // Random inputs make near-ties (probabilities within f32 rounding of each other at the k-th
    // place) rare: about 1e-4 per token with 128 experts.
    const std::string shape = "T " + std::to_string(T) + " E " + std::to_string(E) + " k " + std::to_string(k);
    EXPECT_EQ(download_ints(*gpu, ig), download_ints(*cpu, ic)) << shape << " seed " << seed;
    expect_close(wg, wc, 1e-4, "router weights " + shape);
  }

  // Per token: expert 0 (every token), never expert `empty`, k - 1 others distinct and random,
  // in random order.
  std::vector<int> ragged_ids(int64_t T, int k, int E, int empty) {
    std::vector<int> ids;
    for (int64_t t = 0; t < T; ++t) {
      std::vector<int> others;
      for (int e = 1; e < E; ++e)
        if (e != empty) others.push_back(e);
      std::shuffle(others.begin(), others.end(), rng);
      ids.push_back(0);
      ids.insert(ids.end(), others.begin(), others.begin() + (k - 1));
      std::shuffle(ids.end() - k, ids.end(), rng);
    }
    return ids;
  }

  void check_experts(int64_t T, int k, int64_t E, int64_t H, int64_t I, double tol) {
    check_experts_with(ragged_ids(T, k, int(E), 5), T, k, E, H, I, tol);
  }

  void check_experts_with(const std::vector<int>& ids, int64_t T, int k, int64_t E, int64_t H, int64_t I,
                          double tol) {
    auto w = random_bf16(T * k, 0.1f, 1.f);
    auto x = random_bf16(T * H, -2.f, 2.f);
    const float a = 1.5f / std::sqrt(float(H)), b = 1.5f / std::sqrt(float(I));
    auto [guc, gug] = weight(random_bf16(E * 2 * I * H, -a, a), Shape{E, 2 * I, H});
    auto [dc, dg] = weight(random_bf16(E * H * I, -b, b), Shape{E, H, I});
    Tensor oc = cpu->empty(DType::F32, {T, H}), og = gpu_poisoned(DType::BF16, {T, H});
    cpu->moe_experts(cpu_act(x, {T, H}), cpu_ints(ids, {T, k}), cpu_tensor(w, {T, k}), guc, dc, oc);
    gpu->moe_experts(gpu_act(x, {T, H}), gpu_ints(ids, {T, k}), gpu_tensor(w, DType::F32, {T, k}), gug, dg, og);
    expect_close(og, oc, tol,
                 "moe_experts (" + path + ") T " + std::to_string(T) + " k " + std::to_string(k) + " H " +
                     std::to_string(H) + " I " + std::to_string(I));
  }
};

TEST_F(Moe, RouteChoosesTheSameExperts) {
  check_route(1, 136, 16, 4);
  check_route(9, 136, 20, 4);  // a partial token group and a partial expert group
  check_route(1, 256, 128, 8);
  check_route(8, 256, 128, 8);
  check_route(64, 256, 128, 8);
}

// Past 64 tokens the router runs as one fused kernel per 4 tokens.
TEST_F(Moe, RoutePrefillTokenCount) { check_route(300, 136, 20, 4); }

// The GEMV path (the default up to four tokens' experts) at decode token counts. Expert 0 has T
// rows (up to 64: eight shared-memory passes); H = 136 and I = 40 leave the last column block of
// both GEMVs partly empty. Like the 16-row grouped path it keeps g and u in f32 and rounds the
// activation and the expert outputs to bf16.
TEST_F(Moe, GemvPathDecodeShapes) {
  force("gemv");
  for (int64_t T : {1, 8, 64}) check_experts(T, 4, 16, 136, 40, 1e-2);
  check_experts(64, 8, 32, 256, 64, 1e-2);
  check_experts(1, 8, 16, 2816, 704, 1e-2);  // 26B-A4B's expert shapes at batch 1, where it runs by default
}

// A token naming one expert several times (the router never does, the op allows it): the GEMV
// path sizes shared memory for T rows per pass, so expert 3's five rows take three passes.
TEST_F(Moe, GemvPathRepeatedExpert) {
  force("gemv");
  check_experts_with({3, 3, 3, 1, 3, 0, 2, 3}, 2, 4, 8, 64, 48, 1e-2);
}

// The grouped GEMM on mma.sync in 16-row tiles (the default from five tokens) and in 64-row tiles
// (the default from kMoeMma16MaxRowsPerExpert rows per expert): expert 0 has T rows, several
// tiles with the last partial. H = 136 and I = 40 leave K slices and weight-row blocks partly
// empty; the 26B-A4B shape has K a multiple of the 64-wide slices and N of the 64-row blocks.
TEST_F(Moe, MmaGroupedPathsOverRaggedLoads) {
  for (const char* p : {"mma16", "mma64"}) {
    force(p);
    for (int64_t T : {1, 2, 8, 65}) check_experts(T, 8, 32, 256, 64, 1e-2);
    check_experts(80, 8, 32, 136, 40, 1e-2);
    check_experts(130, 8, 16, 64, 48, 1e-2);
    check_experts(72, 8, 24, 2816, 704, 1e-2);
    check_experts_with({3, 3, 3, 1, 3, 0, 2, 3}, 2, 4, 8, 64, 48, 1e-2);
  }
}

// The default paths round at the same points (g, u f32; activation and expert outputs bf16), so
// the same tokens give the same outputs on each up to summation order: what the golden parity's
// decode mode (GEMV path, one token a step) needs to match its prefill mode (grouped).
TEST_F(Moe, GemvAndMmaPathsAgree) {
  const int64_t T = 8, E = 16, H = 256, I = 64;
  const int k = 8;
  auto ids = ragged_ids(T, k, int(E), 5);
  auto w = random_bf16(T * k, 0.1f, 1.f), x = random_bf16(T * H, -2.f, 2.f);
  const float a = 1.5f / std::sqrt(float(H)), b = 1.5f / std::sqrt(float(I));
  auto [guc, gug] = weight(random_bf16(E * 2 * I * H, -a, a), Shape{E, 2 * I, H});
  auto [dc, dg] = weight(random_bf16(E * H * I, -b, b), Shape{E, H, I});
  std::vector<float> outs[3];
  const char* paths[3] = {"gemv", "mma16", "mma64"};
  for (int p = 0; p < 3; ++p) {
    force(paths[p]);
    Tensor og = gpu_poisoned(DType::BF16, {T, H});
    gpu->moe_experts(gpu_act(x, {T, H}), gpu_ints(ids, {T, k}), gpu_tensor(w, DType::F32, {T, k}), gug, dg, og);
    outs[p] = download(*gpu, og);
  }
  EXPECT_LE(rel_error(outs[1], outs[0]), 4e-3) << "mma16 against gemv, seed " << seed;
  EXPECT_LE(rel_error(outs[2], outs[0]), 4e-3) << "mma64 against gemv, seed " << seed;
}

// An MoE layer's sum (Backend::moe_experts_sum), in place over the dense branch as the model
// runs it: the cuda backend's fused combine (H a multiple of 32) against the same ops run
// separately on the gpu (only the order of the sums of squares differs) and against the cpu; H =
// 136 takes the separate ops.
TEST_F(Moe, ExpertsSumMatchesTheSeparateOps) {
  struct Shape4 { int64_t T, E, H, I; };
  for (const char* p : {"gemv", "mma16", "mma64"})
    for (Shape4 sh : {Shape4{1, 16, 256, 64}, Shape4{8, 32, 256, 64}, Shape4{65, 32, 256, 64}, Shape4{8, 16, 2816, 704},
                      Shape4{8, 16, 136, 40}}) {
      force(p);
      const int k = 8;
      const int64_t T = sh.T, E = sh.E, H = sh.H, I = sh.I;
      const std::string what = std::string(p) + " T " + std::to_string(T) + " H " + std::to_string(H);
      auto ids = ragged_ids(T, k, int(E), 5);
      auto w = random_bf16(T * k, 0.1f, 1.f), x = random_bf16(T * H, -2.f, 2.f), dense = random_bf16(T * H, -3.f, 3.f);
      const float a = 1.5f / std::sqrt(float(H)), b = 1.5f / std::sqrt(float(I));
      auto [guc, gug] = weight(random_bf16(E * 2 * I * H, -a, a), Shape{E, 2 * I, H});
      auto [dc, dg] = weight(random_bf16(E * H * I, -b, b), Shape{E, H, I});
      auto [n1c, n1g] = weight(random_bf16(H, 0.5f, 1.5f), Shape{H});
      auto [n2c, n2g] = weight(random_bf16(H, 0.5f, 1.5f), Shape{H});
      Tensor xg = gpu_act(x, {T, H}), ig = gpu_ints(ids, {T, k}), wg = gpu_tensor(w, DType::F32, {T, k});
      Tensor fused = gpu_act(dense, {T, H}), separate = gpu_act(dense, {T, H});
      gpu->moe_experts_sum(xg, ig, wg, gug, dg, fused, n1g, n2g, 1e-6f, gpu_poisoned(DType::BF16, {T, H}), fused);
      gpu->Backend::moe_experts_sum(xg, ig, wg, gug, dg, separate, n1g, n2g, 1e-6f, gpu_poisoned(DType::BF16, {T, H}),
                                    separate);
      Tensor cc = cpu_act(dense, {T, H});
      cpu->moe_experts_sum(cpu_act(x, {T, H}), cpu_ints(ids, {T, k}), cpu_tensor(w, {T, k}), guc, dc, cc, n1c, n2c,
                           1e-6f, cpu->empty(DType::F32, {T, H}), cc);
      EXPECT_LE(rel_error(download(*gpu, fused), download(*gpu, separate)), 2e-3) << what << " seed " << seed;
      expect_close(fused, cc, 1e-2, "moe_experts_sum against the cpu " + what);
    }
}

// The scratch sized for a prefill call is reused by a following decode call (the path changes).
TEST_F(Moe, PrefillThenDecodeReusesScratch) {
  check_experts(130, 8, 16, 64, 48, 2e-2);
  check_experts(1, 8, 16, 64, 48, 1e-2);
  static_assert(cuda::kMoeGemvMaxRows >= 8 && cuda::kMoeGemvMaxRows < 130 * 8,
                "one token's 8 experts take the GEMV path, 130 tokens a grouped one");
}

}  // namespace
}  // namespace gs::test
