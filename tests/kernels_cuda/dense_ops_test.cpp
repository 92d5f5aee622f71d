// cuda vs cpu: GEMM, embedding, norms, elementwise ops, PLE, fills. Sizes include rows of one,
// widths that are not multiples of 8 (scalar paths) and GEMM shapes off every tile size.
#include <gtest/gtest.h>

#include "backend_harness.h"
#include "core/error.h"

namespace gs::test {
namespace {

TEST(CudaBackendInfo, DeviceCountNeverThrows) {
  // Runs everywhere (CI has no GPU): counting devices must not crash or throw.
  int n = -1;
  EXPECT_NO_THROW(n = cuda_device_count());
  EXPECT_GE(n, 0);
  if (n == 0) EXPECT_THROW(make_cuda_backend(0), Error);
}

class Dense : public CudaVsCpu {};

TEST_F(Dense, MatmulBf16AndF32Out) {
  struct Shape3 { int64_t t, n, k; };
  // Above 64 rows cuBLASLt's algorithm is chosen once per power-of-two bucket of rows (gemm.h):
  // 130, 200, 129 and 256 share the bucket of 256, so the later ones run the algorithm asked for
  // the bucket's top on their own row counts.
  for (Shape3 s : {Shape3{1, 96, 64}, Shape3{7, 300, 136}, Shape3{37, 130, 264}, Shape3{130, 512, 520},
                   Shape3{200, 512, 520}, Shape3{129, 512, 520}, Shape3{256, 512, 520}, Shape3{777, 264, 136}}) {
    auto x = random_bf16(s.t * s.k);
    auto [wc, wg] = weight(random_bf16(s.n * s.k), Shape{s.n, s.k});
    Tensor xc = cpu_act(x, {s.t, s.k}), xg = gpu_act(x, {s.t, s.k});
    Tensor oc = cpu->empty(DType::F32, {s.t, s.n});
    cpu->matmul(xc, wc, oc);
    for (DType dt : {DType::BF16, DType::F32}) {
      Tensor og = gpu_poisoned(dt, {s.t, s.n});
      gpu->matmul(xg, wg, og);
      expect_close(og, oc, dt == DType::F32 ? 1e-3 : kBf16Tol,
                   "matmul T=" + std::to_string(s.t) + " N=" + std::to_string(s.n) + " K=" + std::to_string(s.k));
    }
  }
}

TEST_F(Dense, MatmulRejectsMismatchedShapes) {
  Tensor x = gpu->empty(DType::BF16, {4, 64}), w = gpu->empty(DType::BF16, {32, 48}), o = gpu->empty(DType::BF16, {4, 32});
  EXPECT_THROW(gpu->matmul(x, w, o), Error);
}

TEST_F(Dense, EmbeddingScaled) {
  for (int64_t h : {72, 70}) {
    const int64_t V = 50, T = 11;
    auto [tc, tg] = weight(random_bf16(V * h), Shape{V, h});
    auto ids = random_ints(T, 0, int(V) - 1);
    Tensor oc = cpu->empty(DType::F32, {T, h}), og = gpu_poisoned(DType::BF16, {T, h});
    cpu->embedding(tc, cpu_ints(ids, {T}), 39.25f, oc);
    gpu->embedding(tg, gpu_ints(ids, {T}), 39.25f, og);
    expect_close(og, oc, kBf16Tol, "embedding H=" + std::to_string(h));
  }
}

TEST_F(Dense, RmsNormWithAndWithoutWeightInPlace) {
  for (int64_t cols : {64, 130, 2816, 1030, 20000}) {  // 1030, 20000: more than one vector per thread
    for (int64_t rows : {1, 5}) {
      auto x = random_bf16(rows * cols, -3.f, 3.f);
      auto [wc, wg] = weight(random_bf16(cols, 0.5f, 1.5f), Shape{cols});
      for (bool with_w : {true, false}) {
        Tensor xc = cpu_act(x, {rows, cols}), xg = gpu_act(x, {rows, cols});
        Tensor oc = cpu->empty(DType::F32, {rows, cols}), og = gpu_poisoned(DType::BF16, {rows, cols});
        cpu->rms_norm(xc, with_w ? &wc : nullptr, 1e-6f, oc);
        gpu->rms_norm(xg, with_w ? &wg : nullptr, 1e-6f, og);
        expect_close(og, oc, kBf16Tol, "rms_norm cols=" + std::to_string(cols));
        gpu->rms_norm(xg, with_w ? &wg : nullptr, 1e-6f, xg);  // out aliases x
        expect_close(xg, oc, kBf16Tol, "rms_norm in place cols=" + std::to_string(cols));
      }
    }
  }
}

TEST_F(Dense, ResidualAddNorm) {
  for (int64_t cols : {64, 136, 1536, 5376, 12000}) {
    for (float out_scale : {1.f, 0.7f}) {
      const int64_t rows = 6;
      auto r = random_bf16(rows * cols, -4.f, 4.f), x = random_bf16(rows * cols, -2.f, 2.f);
      auto [wc, wg] = weight(random_bf16(cols, 0.2f, 1.2f), Shape{cols});
      Tensor rc = cpu_act(r, {rows, cols}), rg = gpu_act(r, {rows, cols});
      cpu->residual_add_norm(rc, cpu_act(x, {rows, cols}), wc, 1e-6f, out_scale);
      gpu->residual_add_norm(rg, gpu_act(x, {rows, cols}), wg, 1e-6f, out_scale);
      expect_close(rg, rc, kBf16Tol, "residual_add_norm cols=" + std::to_string(cols));
    }
  }
}

// The fused form the model uses between blocks: the residual as above, and the next block's
// input norm of it, against the cpu's two separate ops.
TEST_F(Dense, ResidualAddNormThenNorm) {
  for (int64_t cols : {64, 136, 1536, 5376, 12000, 1030}) {
    for (float out_scale : {1.f, 0.7f}) {
      const int64_t rows = 5;
      auto r = random_bf16(rows * cols, -4.f, 4.f), x = random_bf16(rows * cols, -2.f, 2.f);
      auto [wc, wg] = weight(random_bf16(cols, 0.2f, 1.2f), Shape{cols});
      auto [nc, ng] = weight(random_bf16(cols, -1.5f, 1.5f), Shape{cols});
      Tensor rc = cpu_act(r, {rows, cols}), rg = gpu_act(r, {rows, cols});
      Tensor oc = cpu->empty(DType::F32, {rows, cols}), og = gpu_poisoned(DType::BF16, {rows, cols});
      cpu->residual_add_norm_then_norm(rc, cpu_act(x, {rows, cols}), wc, 1e-6f, out_scale, nc, oc);
      gpu->residual_add_norm_then_norm(rg, gpu_act(x, {rows, cols}), wg, 1e-6f, out_scale, ng, og);
      const std::string what = " cols=" + std::to_string(cols) + " scale=" + std::to_string(out_scale);
      expect_close(rg, rc, kBf16Tol, "residual" + what);
      expect_close(og, oc, kBf16Tol, "next norm" + what);
    }
  }
}

TEST_F(Dense, AddScaleAndGeluProducts) {
  for (int64_t cols : {128, 61}) {
    const int64_t rows = 9, n = rows * cols;
    auto a = random_bf16(n, -3.f, 3.f), b = random_bf16(n, -3.f, 3.f);
    Tensor oc = cpu->empty(DType::F32, {rows, cols}), og = gpu_poisoned(DType::BF16, {rows, cols});
    cpu->add(cpu_act(a, {rows, cols}), cpu_act(b, {rows, cols}), oc);
    gpu->add(gpu_act(a, {rows, cols}), gpu_act(b, {rows, cols}), og);
    expect_close(og, oc, kBf16Tol, "add");

    Tensor sc = cpu_act(a, {rows, cols}), sg = gpu_act(a, {rows, cols});
    cpu->scale(sc, 0.3f);
    gpu->scale(sg, 0.3f);
    expect_close(sg, sc, kBf16Tol, "scale");

    Tensor pc = cpu->empty(DType::F32, {rows, cols}), pg = gpu_poisoned(DType::BF16, {rows, cols});
    cpu->gelu_tanh_mul_pair(cpu_act(a, {rows, cols}), cpu_act(b, {rows, cols}), pc);
    gpu->gelu_tanh_mul_pair(gpu_act(a, {rows, cols}), gpu_act(b, {rows, cols}), pg);
    expect_close(pg, pc, kBf16Tol, "gelu_tanh_mul_pair");

    auto gu = random_bf16(rows * 2 * cols, -3.f, 3.f);
    Tensor gc = cpu->empty(DType::F32, {rows, cols}), gg = gpu_poisoned(DType::BF16, {rows, cols});
    cpu->gelu_tanh_mul(cpu_act(gu, {rows, 2 * cols}), gc);
    gpu->gelu_tanh_mul(gpu_act(gu, {rows, 2 * cols}), gg);
    expect_close(gg, gc, kBf16Tol, "gelu_tanh_mul cols=" + std::to_string(cols));
  }
}

TEST_F(Dense, SoftcapF32AndBf16) {
  const int64_t rows = 3, cols = 1000;
  auto x = random_bf16(rows * cols, -80.f, 80.f);
  Tensor c = cpu_act(x, {rows, cols});
  cpu->softcap(c, 30.f);
  Tensor g32 = gpu_tensor(x, DType::F32, {rows, cols});
  gpu->softcap(g32, 30.f);
  expect_close(g32, c, 1e-5, "softcap f32");
  Tensor g16 = gpu_act(x, {rows, cols});
  gpu->softcap(g16, 30.f);
  expect_close(g16, c, kBf16Tol, "softcap bf16");
}

TEST_F(Dense, GatherRows) {
  for (int64_t cols : {256, 33}) {
    const int64_t n = 20, r = 7;
    auto x = random_bf16(n * cols);
    auto rows = random_ints(r, 0, int(n) - 1);
    Tensor oc = cpu->empty(DType::F32, {r, cols}), og = gpu_poisoned(DType::BF16, {r, cols});
    cpu->gather_rows(cpu_act(x, {n, cols}), cpu_ints(rows, {r}), oc);
    gpu->gather_rows(gpu_act(x, {n, cols}), gpu_ints(rows, {r}), og);
    expect_close(og, oc, 0.0, "gather_rows bf16 (exact)");
    Tensor of = gpu_poisoned(DType::F32, {r, cols});
    gpu->gather_rows(gpu_tensor(x, DType::F32, {n, cols}), gpu_ints(rows, {r}), of);
    expect_close(of, oc, 0.0, "gather_rows f32 (exact)");
  }
}

TEST_F(Dense, PerLayerInputs) {
  for (int64_t P : {256, 64, 600}) {  // 600: past the 8-per-lane kernel, a partial last lane pass
    const int64_t L = 3, T = 5, V = 40;
    auto proj = random_bf16(T * L * P, -20.f, 20.f);
    auto [tc, tg] = weight(random_bf16(V * L * P), Shape{V, L * P});
    auto [nc, ng] = weight(random_bf16(P, 0.5f, 1.5f), Shape{P});
    auto ids = random_ints(T, 0, int(V) - 1);
    const float ps = 0.0255155f, ts = 16.f, cs = 0.70710678f;
    Tensor oc = cpu->empty(DType::F32, {L, T, P}), og = gpu_poisoned(DType::BF16, {L, T, P});
    cpu->per_layer_inputs(cpu_act(proj, {T, L * P}), tc, cpu_ints(ids, {T}), nc, ps, ts, cs, 1e-6f, oc);
    gpu->per_layer_inputs(gpu_act(proj, {T, L * P}), tg, gpu_ints(ids, {T}), ng, ps, ts, cs, 1e-6f, og);
    expect_close(og, oc, kBf16Tol, "per_layer_inputs P=" + std::to_string(P));
  }
}

TEST_F(Dense, FillUniformMatchesCpuBitForBit) {
  const uint64_t s = rng();
  for (DType dt : {DType::F32, DType::BF16}) {
    Tensor c = cpu->empty(dt, {333}), g = gpu_poisoned(dt, {333});
    cpu->fill_uniform(c, s, 0.02f);
    gpu->fill_uniform(g, s, 0.02f);
    EXPECT_EQ(download(*gpu, g), download(*cpu, c)) << "seed " << s;
  }
  Tensor f = gpu_poisoned(DType::BF16, {17});
  gpu->fill(f, 1.5f);
  EXPECT_EQ(download(*gpu, f), std::vector<float>(17, 1.5f));
}

TEST_F(Dense, UploadWeightConvertsF32AndF16) {
  auto v = random_bf16(100, -5.f, 5.f);
  for (DType dt : {DType::F32, DType::F16}) {
    Tensor h = host_tensor(dt, {10, 10});
    convert_from_f32(dt, v.data(), h.data, v.size());
    Tensor w = gpu->upload_weight(h);
    EXPECT_EQ(w.dtype, DType::BF16);
    std::vector<float> expect(v.size());
    convert_to_f32(dt, h.data, expect.data(), v.size());
    for (auto& e : expect) e = round_bf16(e);
    EXPECT_EQ(download(*gpu, w), expect);
  }
}

}  // namespace
}  // namespace gs::test
