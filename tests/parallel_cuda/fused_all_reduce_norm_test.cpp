// The push all-reduce fused with the residual add and norms (Communicator::all_reduce_residual_norm)
// against what it replaces: the all-reduce, then Backend::residual_add_norm(_then_norm). Same bits,
// on every rank, for the row widths of the four Gemma-4 shapes, 1 to 64 rows, with and without the
// next norm, eagerly and replayed from a CUDA graph, calls of different shapes back to back (each
// kernel must leave the receive buffers clean for the next). Also: inputs holding the push kernel's
// sentinel bits still reduce (to NaN, as NCCL's sum does). Skipped with fewer than 2 GPUs.
#include <gtest/gtest.h>

#include <cmath>

#include "parallel/module_loading.h"
#include "parallel_cuda/gpu_ranks.h"

namespace gs {
namespace {

[[maybe_unused]] const bool kEagerModules = (prefer_eager_module_loading(), true);

struct Case {
  int64_t rows, cols;
  bool next;
  float out_scale;
};

struct Outputs {
  std::vector<uint8_t> resid, next;
};

// Every rank's resid (and next_out) after one call, fused or the reference ops, from the same
// salted inputs: o differs by rank (partial sums), resid and the weights are the same on all ranks.
std::vector<Outputs> run_case(Ranks& g, const Case& c, DType dt, uint64_t salt, bool fused, bool graph) {
  std::vector<Outputs> out(static_cast<size_t>(g.size()));
  g.workers->run([&](int r) {
    Backend& be = *g.backends[size_t(r)];
    Communicator& comm = *g.custom[size_t(r)];
    const Shape shape{c.rows, c.cols};
    Tensor o = be.empty(dt, shape), resid = be.empty(dt, shape), next = be.empty(dt, shape);
    Tensor w = be.empty(DType::BF16, Shape{c.cols}), nw = be.empty(DType::BF16, Shape{c.cols});
    be.copy_from_host(w, input(DType::BF16, c.cols, 90, salt).data());
    be.copy_from_host(nw, input(DType::BF16, c.cols, 91, salt).data());
    const float eps = 1e-6f;
    auto load = [&](uint64_t s) {
      be.copy_from_host(o, input(dt, c.rows * c.cols, r, s).data());
      be.copy_from_host(resid, input(dt, c.rows * c.cols, 77, s).data());
    };
    auto enqueue = [&] {
      if (fused) {
        ASSERT_TRUE(comm.all_reduce_residual_norm(o, resid, w, eps, c.out_scale, c.next ? &nw : nullptr,
                                                  c.next ? &next : nullptr))
            << "the fused path refused " << o.str();
        return;
      }
      comm.all_reduce_sum(o);
      if (c.next) be.residual_add_norm_then_norm(resid, o, w, eps, c.out_scale, nw, next);
      else be.residual_add_norm(resid, o, w, eps, c.out_scale);
    };
    if (!graph) {
      load(salt);
      enqueue();
    } else {
      load(salt + 1);
      enqueue();  // eager first
      be.synchronize();
      be.begin_capture();
      enqueue();
      const int h = be.end_capture();
      load(salt + 2);
      be.replay(h);
      load(salt);
      be.replay(h);
      be.synchronize();
      be.release_graph(h);
    }
    out[size_t(r)].resid.resize(resid.nbytes());
    be.copy_to_host(resid, out[size_t(r)].resid.data());
    if (c.next) {
      out[size_t(r)].next.resize(next.nbytes());
      be.copy_to_host(next, out[size_t(r)].next.data());
    }
  });
  return out;
}

void check_fused(int n_ranks, bool graph) {
  if (gpus() < n_ranks) GTEST_SKIP() << "needs " << n_ranks << " GPUs, " << gpus() << " visible";
  Ranks g(n_ranks);
  ASSERT_EQ(g.custom[0]->name(), "nccl+custom") << "no peer access between the GPUs";
  // Hidden sizes of E2B, E4B, 26B-A4B and 31B; rows of decode and verify steps. Consecutive cases
  // change shape, so each call reads buffers the previous (smaller or larger) call cleaned.
  const std::vector<Case> cases = {{1, 5376, true, 1.f},  {64, 5376, true, 1.f}, {3, 1536, false, 0.5f},
                                   {1, 2560, true, 1.f},  {8, 2816, false, 1.f}, {17, 5376, false, 0.25f},
                                   {2, 2816, true, 0.5f}, {1, 1536, true, 1.f}};
  for (DType dt : {DType::BF16, DType::F32})
    for (size_t i = 0; i < cases.size(); ++i) {
      const Case& c = cases[i];
      if (dt == DType::F32 && c.cols / 4 > 1024) continue;  // rows of more than 1024 vectors: unfused
      SCOPED_TRACE(testing::Message() << n_ranks << " ranks, " << dtype_name(dt) << " [" << c.rows << ", " << c.cols
                                      << "]" << (c.next ? " + next norm" : "") << " scale " << c.out_scale
                                      << (graph ? " (graph)" : ""));
      const uint64_t salt = 1000 * i + (dt == DType::F32);
      const auto fused = run_case(g, c, dt, salt, true, graph);
      const auto ref = run_case(g, c, dt, salt, false, false);
      for (int r = 0; r < n_ranks; ++r) {
        ASSERT_EQ(fused[size_t(r)].resid, ref[size_t(r)].resid) << "rank " << r << ": residual stream differs";
        ASSERT_EQ(fused[size_t(r)].next, ref[size_t(r)].next) << "rank " << r << ": next norm differs";
        ASSERT_EQ(fused[size_t(r)].resid, fused[0].resid) << "rank " << r << " differs from rank 0";
      }
    }
}

TEST(FusedAllReduceNorm, TwoRanksSameBitsAsUnfused) { check_fused(2, false); }
TEST(FusedAllReduceNorm, TwoRanksReplayedFromGraphs) { check_fused(2, true); }
TEST(FusedAllReduceNorm, FourRanksSameBitsAsUnfused) { check_fused(4, false); }
TEST(FusedAllReduceNorm, FourRanksReplayedFromGraphs) { check_fused(4, true); }

TEST(FusedAllReduceNorm, RowsTooLongGoUnfused) {
  if (gpus() < 2) GTEST_SKIP() << "needs 2 GPUs";
  Ranks g(2);
  g.workers->run([&](int r) {
    Backend& be = *g.backends[size_t(r)];
    // f32 rows of 5376: 1344 16-byte vectors, past one block of 1024 threads.
    Tensor o = be.empty(DType::F32, Shape{1, 5376}), resid = be.empty(DType::F32, Shape{1, 5376});
    Tensor w = be.empty(DType::BF16, Shape{5376});
    EXPECT_FALSE(g.custom[size_t(r)]->all_reduce_residual_norm(o, resid, w, 1e-6f, 1.f, nullptr, nullptr));
    EXPECT_FALSE(g.nccl[size_t(r)]->all_reduce_residual_norm(o, resid, w, 1e-6f, 1.f, nullptr, nullptr));
  });
}

// The push kernel marks empty receive locations with all bits set, a NaN; an input lane with those
// bits is sent as another NaN, so the sum is NaN there (as NCCL's is) and the call completes.
TEST(FusedAllReduceNorm, SentinelBitsInTheInputReduceToNan) {
  if (gpus() < 2) GTEST_SKIP() << "needs 2 GPUs";
  Ranks g(2);
  const int64_t n = 5376;
  std::vector<std::vector<uint8_t>> out(2);
  g.workers->run([&](int r) {
    Backend& be = *g.backends[size_t(r)];
    std::vector<uint8_t> bytes = input(DType::BF16, n, r, 3);
    for (int64_t i = r; i < n; i += 97) bytes[size_t(2 * i)] = bytes[size_t(2 * i + 1)] = 0xff;
    Tensor x = be.empty(DType::BF16, Shape{n});
    be.copy_from_host(x, bytes.data());
    g.custom[size_t(r)]->all_reduce_sum(x);
    out[size_t(r)].resize(x.nbytes());
    be.copy_to_host(x, out[size_t(r)].data());
  });
  const auto a = input(DType::BF16, n, 0, 3), b = input(DType::BF16, n, 1, 3);
  for (int64_t i = 0; i < n; ++i) {
    const float got = as_float(DType::BF16, out[0], i);
    if (i % 97 == 0 || i % 97 == 1) {
      EXPECT_TRUE(std::isnan(got)) << i;
    } else {
      const float want = as_float(DType::BF16, a, i) + as_float(DType::BF16, b, i);
      EXPECT_NEAR(got, want, 1e-2f * std::max(1.f, std::fabs(want))) << i;
    }
  }
  EXPECT_EQ(out[0], out[1]);
}

}  // namespace
}  // namespace gs
