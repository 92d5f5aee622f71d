// The custom all-reduce (push and one-shot kernels) against NCCL on the GPUs of this host, for every size class it
// takes, bf16 and f32, eagerly and replayed from CUDA graphs. Skipped with fewer than 2 GPUs
// (tools/gpu/tp-check.sh runs it on a multi-GPU machine, also under compute-sanitizer).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "core/error.h"
#include "parallel/module_loading.h"
#include "parallel_cuda/gpu_ranks.h"

namespace gs {
namespace {

// Before main, so before the first CUDA call of any test here (why: parallel/module_loading.h).
[[maybe_unused]] const bool kEagerModules = (prefer_eager_module_loading(), true);

// Sizes in elements: tiny, one 31B decode row (5376), batch 64 of it, past one block's chunk,
// the threshold region and the largest buffer; all multiples of 16 bytes for both dtypes.
std::vector<int64_t> sizes() {
  std::vector<int64_t> s = {8, 64, 5376, 64 * 5376, 32 * 4096 + 8, 1 << 19};
  if (std::getenv("GS_TP_QUICK")) s = {8, 5376, 64 * 5376};  // compute-sanitizer runs
  return s;
}

// Every rank's result of one all-reduce of the inputs (salted), through `comms`, optionally
// captured in a graph and replayed twice (the second replay on fresh inputs is the one returned).
std::vector<std::vector<uint8_t>> reduce(Ranks& g, std::vector<std::unique_ptr<Communicator>>& comms, DType dt,
                                         int64_t n, uint64_t salt, bool graph) {
  std::vector<std::vector<uint8_t>> out(static_cast<size_t>(g.size()));
  g.workers->run([&](int r) {
    Backend& be = *g.backends[size_t(r)];
    Tensor x = be.empty(dt, Shape{n});
    if (!graph) {
      be.copy_from_host(x, input(dt, n, r, salt).data());
      comms[size_t(r)]->all_reduce_sum(x);
    } else {
      be.copy_from_host(x, input(dt, n, r, salt + 1).data());
      comms[size_t(r)]->all_reduce_sum(x);  // eager first
      be.synchronize();
      be.begin_capture();
      comms[size_t(r)]->all_reduce_sum(x);
      const int h = be.end_capture();
      be.copy_from_host(x, input(dt, n, r, salt + 2).data());
      be.replay(h);
      be.copy_from_host(x, input(dt, n, r, salt).data());
      be.replay(h);
      be.synchronize();
      be.release_graph(h);
    }
    out[size_t(r)].resize(x.nbytes());
    be.copy_to_host(x, out[size_t(r)].data());
  });
  return out;
}

void check_against_nccl(int n_ranks, bool graph) {
  if (gpus() < n_ranks) GTEST_SKIP() << "needs " << n_ranks << " GPUs, " << gpus() << " visible";
  Ranks g(n_ranks);
  ASSERT_EQ(g.custom[0]->name(), "nccl+custom") << "no peer access between the GPUs";
  for (DType dt : {DType::BF16, DType::F32})
    for (int64_t n : sizes()) {
      SCOPED_TRACE(testing::Message() << n_ranks << " ranks, " << dtype_name(dt) << " x " << n
                                      << (graph ? " (graph)" : ""));
      const uint64_t salt = uint64_t(n) * 7 + (dt == DType::F32);
      const auto ours = reduce(g, g.custom, dt, n, salt, graph);
      const auto ref = reduce(g, g.nccl, dt, n, salt, false);
      // Every rank of ours holds the same bits.
      for (int r = 1; r < n_ranks; ++r) ASSERT_EQ(ours[size_t(r)], ours[0]) << "rank " << r << " differs from rank 0";
      if (n_ranks == 2) {
        // a + b is the same in any order: bit-exact with NCCL.
        ASSERT_EQ(ours[0], ref[0]);
        continue;
      }
      // More ranks: NCCL adds in ring order; allow the rounding of another order.
      const float tol = dt == DType::F32 ? 1e-5f : 2e-2f;
      int64_t bad = 0;
      for (int64_t i = 0; i < n; ++i) {
        const float a = as_float(dt, ours[0], i), b = as_float(dt, ref[0], i);
        bad += !(std::fabs(a - b) <= tol * std::max(1.f, std::fabs(b)));
      }
      EXPECT_EQ(bad, 0);
    }
}

TEST(CustomAllReduce, KernelsLoadEagerly) {
  if (gpus() < 1) GTEST_SKIP() << "no GPU";
  EXPECT_FALSE(cuda_modules_load_lazily()) << "CUDA_MODULE_LOADING=" << (std::getenv("CUDA_MODULE_LOADING") ?: "");
}

TEST(CustomAllReduce, TwoRanksBitExactWithNccl) { check_against_nccl(2, false); }
TEST(CustomAllReduce, TwoRanksReplayedFromGraphs) { check_against_nccl(2, true); }
TEST(CustomAllReduce, FourRanksMatchNccl) { check_against_nccl(4, false); }
TEST(CustomAllReduce, FourRanksReplayedFromGraphs) { check_against_nccl(4, true); }

TEST(CustomAllReduce, MessagesItCannotTakeGoThroughNccl) {
  if (gpus() < 2) GTEST_SKIP() << "needs 2 GPUs";
  Ranks g(2);
  // 3 bf16 elements: not a multiple of 16 bytes; bigger than the buffer: 8 MiB + 16.
  for (int64_t n : {int64_t(3), int64_t((8 << 20) / 2 + 8)}) {
    const auto ours = reduce(g, g.custom, DType::BF16, n, 5, false);
    const auto ref = reduce(g, g.nccl, DType::BF16, n, 5, false);
    EXPECT_EQ(ours[0], ref[0]) << n;
  }
}

}  // namespace
}  // namespace gs
