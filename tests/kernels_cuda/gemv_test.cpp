// cuda vs cpu: the decode GEMV (kernels/cuda/gemv.h) for every M it takes, odd N, K off every
// tile size, bf16 and f32 out; once called directly and once through the backend's matmul (which
// sends the rows its kernel policy names there).
#include <cuda_runtime.h>
#include <cmath>
#include <gtest/gtest.h>

#include "backend_harness.h"
#include "core/error.h"
#include "kernels/cuda/gemv.h"

namespace gs::test {
namespace {

class Gemv : public CudaVsCpu {
 protected:
  // launch_gemv on random x and a random weight in [-w_max, w_max] against the cpu backend.
  void expect_gemv_matches_cpu(int64_t m, int64_t n, int64_t k, DType out, float w_max, double tol,
                               const std::string& what) {
    auto x = random_bf16(m * k);
    auto [wc, wg] = weight(random_bf16(n * k, -w_max, w_max), Shape{n, k});
    Tensor xc = cpu_act(x, {m, k}), xg = gpu_act(x, {m, k});
    Tensor oc = cpu->empty(DType::F32, {m, n});
    cpu->matmul(xc, wc, oc);
    Tensor og = gpu_poisoned(out, {m, n});
    gpu->synchronize();  // the poison fill ran on the backend's stream
    cuda::launch_gemv(xg.data, wg.data, og.data, out, m, n, k, nullptr);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << what;
    expect_close(og, oc, tol, what);
  }
};

TEST_F(Gemv, EveryMOddNBothOutDtypes) {
  struct NK { int64_t n, k; };
  // Both variants at every M: the tensor-core kernel from M = 1, then the FMA kernel always.
  for (int mma_min : {1, cuda::kGemvMaxRows + 1})
  for (int64_t m = 1; m <= cuda::kGemvMaxRows; ++m) {
    change_policy([&](cuda::KernelPolicy& p) { p.gemv.mma_min_rows = mma_min; });
    for (NK s : {NK{1, 8}, NK{33, 264}, NK{257, 1536}, NK{771, 2056}, NK{5, 21504}}) {
      auto x = random_bf16(m * s.k);
      auto [wc, wg] = weight(random_bf16(s.n * s.k), Shape{s.n, s.k});
      Tensor xc = cpu_act(x, {m, s.k}), xg = gpu_act(x, {m, s.k});
      Tensor oc = cpu->empty(DType::F32, {m, s.n});
      cpu->matmul(xc, wc, oc);
      for (DType dt : {DType::BF16, DType::F32}) {
        const std::string what = "gemv mma_min=" + std::to_string(mma_min) + " M=" + std::to_string(m) + " N=" + std::to_string(s.n) +
                                 " K=" + std::to_string(s.k) + " out " + std::string(dtype_name(dt));
        Tensor og = gpu_poisoned(dt, {m, s.n});
        gpu->synchronize();  // the poison fill ran on the backend's stream
        cuda::launch_gemv(xg.data, wg.data, og.data, dt, m, s.n, s.k, nullptr);
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        expect_close(og, oc, dt == DType::F32 ? 1e-3 : kBf16Tol, what + " (direct)");
        Tensor ob = gpu_poisoned(dt, {m, s.n});
        gpu->matmul(xg, wg, ob);
        expect_close(ob, oc, dt == DType::F32 ? 1e-3 : kBf16Tol, what + " (backend matmul)");
      }
    }
  }
  change_policy([&](cuda::KernelPolicy& p) { p.gemv.mma_min_rows = cuda::kGemvMmaMinRows; });  // the default
}

// The tensor-core variant in every shape it can be set to (shared-memory stages, n8 tiles per warp,
// K split up to the block's four warps, down to one or two stages a warp), with rows that leave a
// warp's tiles short, K below one stage and off the stage size, and M on both sides of 8 (x rows
// g + 8 loaded or not).
TEST_F(Gemv, TensorCoreVariantInEveryShape) {
  struct NK { int64_t n, k; };
  change_policy([&](cuda::KernelPolicy& p) { p.gemv.mma_min_rows = 1; });
  for (int stages : {2, 3, 4})
    for (int tiles : {1, 2})
      for (int warps_per_sm : {1, 16, 4096})
      for (int min_stages : {1, 2}) {
        if (warps_per_sm == 1 && min_stages == 2) continue;  // no split: the stage bound does not apply
        change_policy(
            [&](cuda::KernelPolicy& p) { p.gemv.mma_shape = {stages, tiles, warps_per_sm, min_stages}; });
        for (int64_t m : {1, 3, 8, 9, 16})
          for (NK s : {NK{1, 8}, NK{17, 264}, NK{1536, 2056}, NK{40, 8200}}) {
            const std::string what = "mma " + std::to_string(stages) + "," + std::to_string(tiles) + "," +
                                     std::to_string(warps_per_sm) + "," + std::to_string(min_stages) +
                                     " M=" + std::to_string(m) + " N=" + std::to_string(s.n) +
                                     " K=" + std::to_string(s.k);
            expect_gemv_matches_cpu(m, s.n, s.k, DType::F32, 1.f, 1e-3, what);
          }
      }
  change_policy([&](cuda::KernelPolicy& p) { p.gemv.mma_shape = {3, 1, 16}; });  // the defaults
  change_policy([&](cuda::KernelPolicy& p) { p.gemv.mma_min_rows = cuda::kGemvMmaMinRows; });
}

TEST_F(Gemv, DecodeShapesOfE2B) {
  // qkv, o_proj, gate_up, down, PLE gate and projection of E2B at batch 1 and 8.
  struct NK { int64_t n, k; };
  for (int64_t m : {1, 8})
    for (NK s : {NK{2560, 1536}, NK{1536, 2048}, NK{12288, 1536}, NK{1536, 6144}, NK{256, 1536}, NK{1536, 256}}) {
      expect_gemv_matches_cpu(m, s.n, s.k, DType::BF16, 0.1f, kBf16Tol,
                              "gemv E2B M=" + std::to_string(m) + " N=" + std::to_string(s.n));
    }
}

// The fused epilogues against the two ops they replace: on the FMA kernel bit-identical to the GEMV
// into bf16 followed by the elementwise kernel (same dot products, same roundings), and close to
// the cpu backend through Backend::matmul_gelu_mul(_pair).
// The cuda backend rounds the pre-activation, gelu and the product to bf16 (three roundings of up
// to 2^-9 each, the first amplified by gelu's slope), the cpu backend keeps f32; with M·N = 3
// outputs one element carries the whole norm, and 1.03e-2 was seen (H200, 2026-11-25).
constexpr double kFusedGeluTol = 2e-2;

// The fused GeLU epilogues on random operands at (m, n, k), each beside the two ops it replaces
// (the plain GEMV into bf16, then the elementwise kernel) and the cpu backend's result.
struct FusedRun {
  Tensor xg, wg, vg, bg;            // on the gpu: x, w = [gate; up] (2N x K), v (N x K), b (M x N)
  Tensor fused, two_ops, cpu;       // gelu_mul: gelu(x·gateᵀ) · x·upᵀ
  Tensor fused_aux, pair, cpu_aux;  // gelu_mul_aux: gelu(x·vᵀ) · b
};

class GemvFused : public Gemv {
 protected:
  FusedRun run(int64_t m, int64_t n, int64_t k) {
    FusedRun r;
    auto x = random_bf16(m * k);
    Tensor xc = cpu_act(x, {m, k});
    r.xg = gpu_act(x, {m, k});
    // Weights scaled by K^-1/2, as a trained layer's are, so the pre-activations are O(1): deep in
    // gelu's negative tail a bf16 rounding of the dot product (the cuda backend's, not the cpu
    // backend's f32) changes the output by a large relative amount, and a 5-wide row would
    // measure that instead of the kernel.
    const float ws = 1.5f / std::sqrt(float(k));
    auto [wc, wg] = weight(random_bf16(2 * n * k, -ws, ws), Shape{2 * n, k});
    auto [vc, vg] = weight(random_bf16(n * k, -ws, ws), Shape{n, k});
    auto b = random_bf16(m * n);
    Tensor bc = cpu_act(b, {m, n});
    r.wg = wg, r.vg = vg, r.bg = gpu_act(b, {m, n});
    Tensor gu = gpu_poisoned(DType::BF16, {m, 2 * n}), g = gpu_poisoned(DType::BF16, {m, n});
    r.two_ops = gpu_poisoned(DType::BF16, {m, n}), r.fused = gpu_poisoned(DType::BF16, {m, n});
    r.pair = gpu_poisoned(DType::BF16, {m, n}), r.fused_aux = gpu_poisoned(DType::BF16, {m, n});
    gpu->synchronize();
    cuda::launch_gemv(r.xg.data, wg.data, gu.data, DType::BF16, m, 2 * n, k, nullptr);
    cuda::launch_gemv_gelu_mul(r.xg.data, wg.data, r.fused.data, m, n, k, nullptr);
    cuda::launch_gemv(r.xg.data, vg.data, g.data, DType::BF16, m, n, k, nullptr);
    cuda::launch_gemv_gelu_mul_aux(r.xg.data, vg.data, r.bg.data, r.fused_aux.data, m, n, k, nullptr);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    gpu->gelu_tanh_mul(gu, r.two_ops);
    gpu->gelu_tanh_mul_pair(g, r.bg, r.pair);
    r.cpu = cpu->empty(DType::F32, {m, n}), r.cpu_aux = cpu->empty(DType::F32, {m, n});
    Tensor guc = cpu->empty(DType::F32, {m, 2 * n});
    cpu->matmul_gelu_mul(xc, wc, guc, r.cpu);
    cpu->matmul_gelu_mul_pair(xc, vc, bc, r.cpu_aux);
    return r;
  }
  std::vector<float> bits(const Tensor& t) { return download(*gpu, t); }
};

TEST_F(GemvFused, FmaEpiloguesMatchTheTwoOps) {
  struct IK { int64_t n, k; };
  // The epilogues and the plain GEMV they are compared with on the FMA kernel at every M.
  change_policy([&](cuda::KernelPolicy& p) { p.gemv.mma_min_rows = cuda::kGemvMaxRows + 1; });
  for (int64_t m : {1, 3, 16})
    for (IK s : {IK{1, 8}, IK{7, 264}, IK{6144, 1536}, IK{256, 1536}, IK{5, 21504}}) {
      const std::string what = "M=" + std::to_string(m) + " N=" + std::to_string(s.n) + " K=" + std::to_string(s.k);
      FusedRun r = run(m, s.n, s.k);
      EXPECT_EQ(bits(r.fused), bits(r.two_ops)) << "gelu_mul " << what;
      EXPECT_EQ(bits(r.fused_aux), bits(r.pair)) << "gelu_mul_aux " << what;
      // Through the backend, which takes the fused path where it routes the GEMV.
      Tensor ob = gpu_poisoned(DType::BF16, {m, s.n}), gub = gpu_poisoned(DType::BF16, {m, 2 * s.n});
      gpu->matmul_gelu_mul(r.xg, r.wg, gub, ob);
      expect_close(ob, r.cpu, kFusedGeluTol, "backend matmul_gelu_mul " + what);
      Tensor pb = gpu_poisoned(DType::BF16, {m, s.n});
      gpu->matmul_gelu_mul_pair(r.xg, r.vg, r.bg, pb);
      expect_close(pb, r.cpu_aux, kFusedGeluTol, "backend matmul_gelu_mul_pair " + what);
    }
  change_policy([&](cuda::KernelPolicy& p) { p.gemv.mma_min_rows = cuda::kGemvMmaMinRows; });  // the default
}

// The tensor-core variant's epilogues (from kGemvMmaMinRows rows) in every shape it can be set to,
// against the cpu backend and the two ops. Not bit for bit: GeluMul pairs two tiles a warp, so its
// K split can differ from the plain launch's and the sums round apart.
TEST_F(GemvFused, TensorCoreEpilogues) {
  struct IK { int64_t n, k; };
  change_policy([&](cuda::KernelPolicy& p) { p.gemv.mma_min_rows = 1; });
  for (int stages : {2, 3, 4})
    for (int tiles : {1, 2}) {
      change_policy([&](cuda::KernelPolicy& p) { p.gemv.mma_shape = {stages, tiles, 16}; });
      for (int64_t m : {1, 3, 8, 9, 16})
        for (IK s : {IK{1, 8}, IK{7, 264}, IK{6144, 1536}, IK{256, 1536}, IK{5, 8200}}) {
          const std::string what = "mma " + std::to_string(stages) + "," + std::to_string(tiles) +
                                   " M=" + std::to_string(m) + " N=" + std::to_string(s.n) + " K=" + std::to_string(s.k);
          FusedRun r = run(m, s.n, s.k);
          expect_close(r.fused, r.cpu, kFusedGeluTol, "gelu_mul vs cpu " + what);
          expect_close(r.fused_aux, r.cpu_aux, kFusedGeluTol, "gelu_mul_aux vs cpu " + what);
          EXPECT_LE(rel_error(bits(r.fused), bits(r.two_ops)), kFusedGeluTol) << "gelu_mul vs two ops " << what;
          EXPECT_LE(rel_error(bits(r.fused_aux), bits(r.pair)), kFusedGeluTol) << "gelu_mul_aux vs two ops " << what;
        }
    }
  change_policy([&](cuda::KernelPolicy& p) { p.gemv.mma_shape = {3, 1, 16}; });  // the defaults
  change_policy([&](cuda::KernelPolicy& p) { p.gemv.mma_min_rows = cuda::kGemvMmaMinRows; });
}

// Weights too big for one wave of blocks stream through a grid of at most one wave whose warp
// groups take several row groups each (gemv_stream.cuh). The sums are the waves' in the same
// order, so both launches give the same bits, for each epilogue; and both match the cpu. Shapes:
// E2B's gate_up (the K split in two), a double-wide one, rows that leave the last groups short or
// empty, K off the chunk stride, an LM head's worth of rows, and rows long enough (K >= 4096) for
// the variant held to 6 blocks an SM.
TEST_F(Gemv, StreamingBeyondOneWaveGivesTheWavesBits) {
  struct NK { int64_t n, k; };
  auto bits = [&](const Tensor& t) { return download(*gpu, t); };
  for (int64_t m : {1, 2})
    for (NK s : {NK{12288, 1536}, NK{24576, 1536}, NK{24570, 1544}, NK{19001, 264}, NK{131072, 256},
                 NK{13001, 4104}}) {
      const std::string what = "M=" + std::to_string(m) + " N=" + std::to_string(s.n) + " K=" + std::to_string(s.k);
      const float ws = 1.5f / std::sqrt(float(s.k));
      auto x = random_bf16(m * s.k);
      Tensor xc = cpu_act(x, {m, s.k}), xg = gpu_act(x, {m, s.k});
      auto [wc, wg] = weight(random_bf16(s.n * s.k, -ws, ws), Shape{s.n, s.k});
      auto aux = random_bf16(m * s.n);
      Tensor auxg = gpu_act(aux, {m, s.n});
      std::vector<float> out[2][3];
      for (int streaming = 0; streaming < 2; ++streaming) {
        change_policy([&](cuda::KernelPolicy& p) { p.gemv.streaming = streaming == 1; });
        Tensor plain = gpu_poisoned(DType::BF16, {m, s.n}), gelu = gpu_poisoned(DType::BF16, {m, s.n / 2});
        Tensor with_aux = gpu_poisoned(DType::BF16, {m, s.n});
        gpu->synchronize();
        cuda::launch_gemv(xg.data, wg.data, plain.data, DType::BF16, m, s.n, s.k, nullptr);
        cuda::launch_gemv_gelu_mul(xg.data, wg.data, gelu.data, m, s.n / 2, s.k, nullptr);
        cuda::launch_gemv_gelu_mul_aux(xg.data, wg.data, auxg.data, with_aux.data, m, s.n, s.k, nullptr);
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << what;
        out[streaming][0] = bits(plain), out[streaming][1] = bits(gelu), out[streaming][2] = bits(with_aux);
        if (streaming == 1) {
          Tensor oc = cpu->empty(DType::F32, {m, s.n});
          cpu->matmul(xc, wc, oc);
          expect_close(plain, oc, kBf16Tol, "streamed gemv " + what);
        }
      }
      change_policy([&](cuda::KernelPolicy& p) { p.gemv.streaming = true; });
      EXPECT_EQ(out[1][0], out[0][0]) << "plain " << what;
      EXPECT_EQ(out[1][1], out[0][1]) << "gelu_mul " << what;
      EXPECT_EQ(out[1][2], out[0][2]) << "gelu_mul_aux " << what;
    }
}

// The batch-invariant policy (gemv.h): the backend sends every row count to the tensor-core kernel
// in 16-row tiles, and each row has the bits of that row alone, for the plain matmul (bf16 and f32
// out) and both GeLU forms; the results stay close to the cpu backend's.
TEST_F(GemvFused, BatchInvariantRowsHaveTheirOneRowBits) {
  struct NK { int64_t n, k; };
  change_policy([&](cuda::KernelPolicy& p) { p.batch_invariant = true; });
  for (NK s : {NK{1, 8}, NK{771, 2056}, NK{3072, 1536}, NK{40, 8200}})
    for (int64_t m : {2, 9, 16, 17, 40}) {
      const std::string what = "M=" + std::to_string(m) + " N=" + std::to_string(s.n) + " K=" + std::to_string(s.k);
      const float ws = 1.5f / std::sqrt(float(s.k));
      auto x = random_bf16(m * s.k);
      auto [wc, wg] = weight(random_bf16(2 * s.n * s.k, -ws, ws), Shape{2 * s.n, s.k});
      auto b = random_bf16(m * 2 * s.n);
      Tensor xg = gpu_act(x, {m, s.k}), bg = gpu_act(b, {m, 2 * s.n});
      auto products = [&](const Tensor& xs, const Tensor& bs, int64_t rows) {
        Tensor f32 = gpu_poisoned(DType::F32, {rows, 2 * s.n}), b16 = gpu_poisoned(DType::BF16, {rows, 2 * s.n});
        Tensor gu = gpu_poisoned(DType::BF16, {rows, 2 * s.n}), gelu = gpu_poisoned(DType::BF16, {rows, s.n});
        Tensor pair = gpu_poisoned(DType::BF16, {rows, 2 * s.n});
        gpu->matmul(xs, wg, f32);
        gpu->matmul(xs, wg, b16);
        gpu->matmul_gelu_mul(xs, wg, gu, gelu);
        gpu->matmul_gelu_mul_pair(xs, wg, bs, pair);
        return std::vector<std::vector<float>>{bits(f32), bits(b16), bits(gelu), bits(pair)};
      };
      const auto all = products(xg, bg, m);
      for (int64_t r = 0; r < m; ++r) {
        const std::vector<float> xr(x.begin() + r * s.k, x.begin() + (r + 1) * s.k);
        const std::vector<float> br(b.begin() + r * 2 * s.n, b.begin() + (r + 1) * 2 * s.n);
        const auto one = products(gpu_act(xr, {1, s.k}), gpu_act(br, {1, 2 * s.n}), 1);
        for (size_t o = 0; o < one.size(); ++o) {
          const size_t width = one[o].size();
          const std::vector<float> row(all[o].begin() + long(r * int64_t(width)),
                                       all[o].begin() + long((r + 1) * int64_t(width)));
          EXPECT_EQ(row, one[o]) << what << ": output " << o << " row " << r << " differs from its one-row bits";
        }
      }
      Tensor oc = cpu->empty(DType::F32, {m, 2 * s.n});
      cpu->matmul(cpu_act(x, {m, s.k}), wc, oc);
      Tensor og = gpu_poisoned(DType::F32, {m, 2 * s.n});
      gpu->matmul(xg, wg, og);
      expect_close(og, oc, 1e-3, "batch-invariant gemv vs cpu " + what);
    }
  change_policy([&](cuda::KernelPolicy& p) { p.batch_invariant = false; });
}

TEST_F(Gemv, RejectsWhatItCannotTake) {
  EXPECT_FALSE(cuda::gemv_supported(0, 8, 8, DType::BF16, nullptr, nullptr));
  EXPECT_FALSE(cuda::gemv_supported(cuda::kGemvMaxRows + 1, 8, 8, DType::BF16, nullptr, nullptr));
  EXPECT_FALSE(cuda::gemv_supported(1, 8, 12, DType::BF16, nullptr, nullptr));  // K % 8
  EXPECT_FALSE(cuda::gemv_supported(1, 8, 8, DType::F16, nullptr, nullptr));
  EXPECT_FALSE(cuda::gemv_supported(1, 8, 8, DType::BF16, reinterpret_cast<void*>(2), nullptr));
  EXPECT_THROW(cuda::launch_gemv(nullptr, nullptr, nullptr, DType::BF16, 1, 8, 12, nullptr), Error);
  EXPECT_THROW(cuda::launch_gemv_gelu_mul(nullptr, nullptr, nullptr, 1, 4, 12, nullptr), Error);
  EXPECT_THROW(cuda::launch_gemv_gelu_mul_aux(nullptr, nullptr, nullptr, nullptr, 1, 4, 8, nullptr), Error);
}

}  // namespace
}  // namespace gs::test
