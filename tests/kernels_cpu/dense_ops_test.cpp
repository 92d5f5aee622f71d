// Dense CPU ops against double-precision references on fresh random inputs.
#include <gtest/gtest.h>

#include "ops/sampling_rng.h"
#include "test_util.h"

namespace gs::test {
namespace {

class DenseOps : public testing::Test {
 protected:
  std::unique_ptr<Backend> be = make_cpu_backend(3);
  Rng rng;
};

TEST_F(DenseOps, MatmulAllWeightDtypesAndShapes) {
  SCOPED_TRACE(rng.trace());
  for (DType wt : {DType::F32, DType::BF16, DType::F16}) {
    for (int T : {1, 3, 37}) {
      const int K = rng.integer(1, 300), N = rng.integer(1, 700);
      SCOPED_TRACE(std::string(dtype_name(wt)) + " T=" + std::to_string(T) + " K=" + std::to_string(K) +
                   " N=" + std::to_string(N));
      Tensor x = random_tensor(rng, DType::F32, Shape{T, K});
      Tensor w = be->upload_weight(random_tensor(rng, wt, Shape{N, K}));
      EXPECT_EQ(w.dtype, wt) << "the cpu backend keeps weights in the file's dtype";
      Tensor out = poisoned(Shape{T, N});
      be->matmul(x, w, out);
      std::vector<double> want(size_t(T) * N);
      for (int t = 0; t < T; ++t)
        for (int n = 0; n < N; ++n) {
          double s = 0;
          for (int k = 0; k < K; ++k) s += value(x, int64_t(t) * K + k) * value(w, int64_t(n) * K + k);
          want[size_t(t) * N + n] = s;
        }
      expect_close(out, want, 1e-4 * std::sqrt(K), 1e-5, "matmul");
    }
  }
}

TEST_F(DenseOps, MatmulRejectsMismatchedShapes) {
  Tensor x = random_tensor(rng, DType::F32, Shape{2, 8});
  Tensor w = random_tensor(rng, DType::BF16, Shape{4, 9});
  Tensor out = poisoned(Shape{2, 4});
  EXPECT_THROW(be->matmul(x, w, out), Error);
}

TEST_F(DenseOps, RmsNormUsesTheRawWeight) {
  SCOPED_TRACE(rng.trace());
  const int T = rng.integer(1, 9), H = rng.integer(2, 600);
  Tensor x = random_tensor(rng, DType::F32, Shape{T, H}, -3, 3);
  Tensor w = random_tensor(rng, DType::BF16, Shape{H}, 0.2f, 2.f);
  Tensor out = poisoned(Shape{T, H});
  be->rms_norm(x, &w, 1e-6f, out);
  std::vector<double> want, want_plain;
  std::vector<double> xd(static_cast<size_t>(H));
  for (int t = 0; t < T; ++t) {
    for (int i = 0; i < H; ++i) xd[size_t(i)] = value(x, int64_t(t) * H + i);
    auto y = rms_norm_ref(xd.data(), H, &w, 1e-6);
    auto yp = rms_norm_ref(xd.data(), H, nullptr, 1e-6);
    want.insert(want.end(), y.begin(), y.end());
    want_plain.insert(want_plain.end(), yp.begin(), yp.end());
  }
  expect_close(out, want, 1e-6, 2e-6, "rms_norm with weight");
  be->rms_norm(x, nullptr, 1e-6f, x);  // in place, no weight (v_norm)
  expect_close(x, want_plain, 1e-6, 2e-6, "rms_norm without weight, in place");
}

TEST_F(DenseOps, ResidualAddNormWithLayerScalar) {
  SCOPED_TRACE(rng.trace());
  const int T = rng.integer(1, 7), H = rng.integer(2, 300);
  Tensor h = random_tensor(rng, DType::F32, Shape{T, H}, -5, 5);
  Tensor x = random_tensor(rng, DType::F32, Shape{T, H}, -2, 2);
  Tensor w = random_tensor(rng, DType::F32, Shape{H}, 0.2f, 2.f);
  const float s = rng.uniform(0.3f, 1.7f);
  std::vector<double> want;
  std::vector<double> xd(static_cast<size_t>(H));
  for (int t = 0; t < T; ++t) {
    for (int i = 0; i < H; ++i) xd[size_t(i)] = value(x, int64_t(t) * H + i);
    auto y = rms_norm_ref(xd.data(), H, &w, 1e-6);
    for (int i = 0; i < H; ++i) want.push_back((value(h, int64_t(t) * H + i) + y[size_t(i)]) * s);
  }
  be->residual_add_norm(h, x, w, 1e-6f, s);
  expect_close(h, want, 1e-5, 2e-6, "residual_add_norm");
}

TEST_F(DenseOps, GeluTanhGating) {
  SCOPED_TRACE(rng.trace());
  const int T = rng.integer(1, 6), I = rng.integer(1, 200);
  Tensor gu = random_tensor(rng, DType::F32, Shape{T, 2 * I}, -6, 6);
  Tensor out = poisoned(Shape{T, I});
  be->gelu_tanh_mul(gu, out);
  std::vector<double> want;
  for (int t = 0; t < T; ++t)
    for (int i = 0; i < I; ++i)
      want.push_back(gelu_ref(value(gu, int64_t(t) * 2 * I + i)) * value(gu, int64_t(t) * 2 * I + I + i));
  expect_close(out, want, 1e-6, 1e-6, "gelu_tanh_mul");

  Tensor a = random_tensor(rng, DType::F32, Shape{T, I}, -6, 6), b = random_tensor(rng, DType::F32, Shape{T, I});
  std::vector<double> want2;
  for (int64_t i = 0; i < a.numel(); ++i) want2.push_back(gelu_ref(value(a, i)) * value(b, i));
  be->gelu_tanh_mul_pair(a, b, a);  // out aliases an input, as the PLE block uses it
  expect_close(a, want2, 1e-6, 1e-6, "gelu_tanh_mul_pair");
}

TEST_F(DenseOps, EmbeddingScalesRowsAndRejectsBadIds) {
  SCOPED_TRACE(rng.trace());
  const int V = rng.integer(2, 100), H = rng.integer(1, 64), T = rng.integer(1, 20);
  Tensor table = random_tensor(rng, DType::BF16, Shape{V, H});
  std::vector<int> ids(static_cast<size_t>(T));
  for (int& i : ids) i = rng.integer(0, V - 1);
  Tensor out = poisoned(Shape{T, H});
  const float scale = round_bf16(std::sqrt(float(H)));
  be->embedding(table, i32_tensor(ids), scale, out);
  std::vector<double> want;
  for (int t = 0; t < T; ++t)
    for (int i = 0; i < H; ++i) want.push_back(value(table, int64_t(ids[size_t(t)]) * H + i) * scale);
  expect_close(out, want, 0, 1e-7, "embedding");
  ids[0] = V;
  EXPECT_THROW(be->embedding(table, i32_tensor(ids), scale, out), Error);
}

TEST_F(DenseOps, PerLayerInputs) {
  SCOPED_TRACE(rng.trace());
  const int L = rng.integer(1, 5), P = rng.integer(2, 40), T = rng.integer(1, 6), V = rng.integer(2, 30);
  Tensor proj = random_tensor(rng, DType::F32, Shape{T, L * P}, -4, 4);
  Tensor table = random_tensor(rng, DType::BF16, Shape{V, L * P});
  Tensor norm_w = random_tensor(rng, DType::BF16, Shape{P}, 0.3f, 1.7f);
  std::vector<int> ids(static_cast<size_t>(T));
  for (int& i : ids) i = rng.integer(0, V - 1);
  ids.back() = V + 5;  // outside the PLE table: reads the pad row 0
  const float ps = 0.125f, ts = std::sqrt(float(P)), cs = float(std::sqrt(0.5));
  Tensor out = poisoned(Shape{L, T, P});
  be->per_layer_inputs(proj, table, i32_tensor(ids), norm_w, ps, ts, cs, 1e-6f, out);
  std::vector<double> want(size_t(L) * T * P);
  std::vector<double> c(static_cast<size_t>(P));
  for (int t = 0; t < T; ++t) {
    const int row = ids[size_t(t)] < V ? ids[size_t(t)] : 0;
    for (int l = 0; l < L; ++l) {
      for (int i = 0; i < P; ++i) c[size_t(i)] = value(proj, int64_t(t) * L * P + l * P + i) * ps;
      auto n = rms_norm_ref(c.data(), P, &norm_w, 1e-6);
      for (int i = 0; i < P; ++i)
        want[(size_t(l) * T + t) * P + i] = (n[size_t(i)] + value(table, int64_t(row) * L * P + l * P + i) * ts) * cs;
    }
  }
  expect_close(out, want, 1e-5, 1e-5, "per_layer_inputs");
}

TEST_F(DenseOps, GatherSoftcapAddScale) {
  SCOPED_TRACE(rng.trace());
  const int T = rng.integer(2, 10), H = rng.integer(1, 50);
  Tensor x = random_tensor(rng, DType::F32, Shape{T, H}, -80, 80);
  std::vector<int> rows{T - 1, 0, T / 2};
  Tensor g = poisoned(Shape{3, H});
  be->gather_rows(x, i32_tensor(rows), g);
  std::vector<double> want;
  for (int r : rows)
    for (int i = 0; i < H; ++i) want.push_back(30.0 * std::tanh(value(x, int64_t(r) * H + i) / 30.0));
  be->softcap(g, 30.f);
  expect_close(g, want, 2e-6, 1e-6, "gather_rows + softcap");
  EXPECT_THROW(be->gather_rows(x, i32_tensor({T}), poisoned(Shape{1, H})), Error);

  Tensor a = random_tensor(rng, DType::F32, Shape{T, H}), b = random_tensor(rng, DType::F32, Shape{T, H});
  Tensor sum = poisoned(Shape{T, H});
  be->add(a, b, sum);
  be->scale(sum, 0.5f);
  std::vector<double> want2;
  for (int64_t i = 0; i < a.numel(); ++i) want2.push_back((value(a, i) + value(b, i)) * 0.5);
  expect_close(sum, want2, 1e-7, 1e-6, "add + scale");
}

TEST_F(DenseOps, FillUniformIsTheSharedCounterBasedGenerator) {
  for (DType dt : {DType::F32, DType::BF16}) {
    Tensor t = be->empty(dt, Shape{1000, 33});
    be->fill_uniform(t, 77, 0.5f);
    for (int64_t i = 0; i < t.numel(); ++i) {
      ASSERT_EQ(value(t, i), round_to(dt, rng::fill_value(77, uint64_t(i), 0.5f))) << i;
      ASSERT_LE(std::fabs(value(t, i)), 0.5);
    }
  }
  // A different seed gives different values; the mean is near zero.
  Tensor a = be->empty(DType::F32, Shape{10000}), b = be->empty(DType::F32, Shape{10000});
  be->fill_uniform(a, 1, 1.f);
  be->fill_uniform(b, 2, 1.f);
  double mean = 0;
  int same = 0;
  for (int i = 0; i < 10000; ++i) {
    mean += value(a, i) / 10000;
    same += value(a, i) == value(b, i);
  }
  EXPECT_LT(std::fabs(mean), 0.05);
  EXPECT_LT(same, 10);
}

TEST_F(DenseOps, MemoryReportComesFromProcMeminfo) {
  EXPECT_GT(be->total_memory_bytes(), size_t(0));
  EXPECT_LE(be->free_memory_bytes(), be->total_memory_bytes());
  EXPECT_EQ(be->activation_dtype(), DType::F32);
  EXPECT_EQ(be->weight_dtype(DType::BF16), DType::BF16);
  EXPECT_THROW(be->weight_dtype(DType::I32), Error);
}

}  // namespace
}  // namespace gs::test
