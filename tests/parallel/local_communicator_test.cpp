// The in-process communicator (the cpu ranks' collectives) and the rank threads that drive them.
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>

#include "core/error.h"
#include "parallel/local_communicator.h"
#include "parallel/rank_workers.h"

namespace gs {
namespace {

struct Group {
  explicit Group(int n) : comms(make_local_communicators(n)), workers(n, [this] {
    for (auto& c : comms) c->abort();
  }) {}
  std::vector<std::unique_ptr<Communicator>> comms;
  RankWorkers workers;
};

float value(int rank, int i) { return 0.1f * float(rank + 1) + 1e-3f * float(i) - 0.37f * float(i % 3); }

TEST(LocalCommunicator, AllReduceSumsInRankOrderWithIdenticalResults) {
  for (int n : {1, 2, 3, 4}) {
    Group g(n);
    const int len = 1000;
    std::vector<std::vector<float>> out(static_cast<size_t>(n));
    g.workers.run([&](int r) {
      Tensor t = host_tensor(DType::F32, Shape{10, 100});
      for (int i = 0; i < len; ++i) t.ptr<float>()[i] = value(r, i);
      for (int rep = 0; rep < 3; ++rep) g.comms[size_t(r)]->all_reduce_sum(t);  // reused slots stay consistent
      out[size_t(r)].assign(t.ptr<float>(), t.ptr<float>() + len);
    });
    for (int i = 0; i < len; ++i) {
      float once = 0.f;
      for (int r = 0; r < n; ++r) once += value(r, i);
      float twice = 0.f, thrice = 0.f;
      for (int r = 0; r < n; ++r) twice += once;
      for (int r = 0; r < n; ++r) thrice += twice;
      for (int r = 0; r < n; ++r) ASSERT_EQ(out[size_t(r)][size_t(i)], thrice) << "n " << n << " rank " << r << " i " << i;
    }
  }
}

TEST(LocalCommunicator, AllGatherPlacesEachRanksShard) {
  const int n = 3, R = 2, C = 4;
  Group g(n);
  std::vector<std::vector<float>> cols(n), rows(n);
  g.workers.run([&](int r) {
    Tensor shard = host_tensor(DType::F32, Shape{R, C});
    for (int i = 0; i < R * C; ++i) shard.ptr<float>()[i] = float(100 * r + i);
    Tensor c = host_tensor(DType::F32, Shape{R, n * C}), w = host_tensor(DType::F32, Shape{n * R, C});
    g.comms[size_t(r)]->all_gather_cols(shard, c);
    g.comms[size_t(r)]->all_gather_rows(shard, w);
    cols[size_t(r)].assign(c.ptr<float>(), c.ptr<float>() + c.numel());
    rows[size_t(r)].assign(w.ptr<float>(), w.ptr<float>() + w.numel());
  });
  for (int r = 0; r < n; ++r)
    for (int q = 0; q < n; ++q)
      for (int i = 0; i < R; ++i)
        for (int j = 0; j < C; ++j) {
          EXPECT_EQ(cols[size_t(r)][size_t(i * n * C + q * C + j)], float(100 * q + i * C + j));
          EXPECT_EQ(rows[size_t(r)][size_t((q * R + i) * C + j)], float(100 * q + i * C + j));
        }
}

TEST(RankWorkers, AFailingRankStopsTheOthersAndNamesItself) {
  Group g(3);
  std::atomic<int> reached{0};
  try {
    g.workers.run([&](int r) {
      if (r == 1) throw Error("out of memory while loading");
      Tensor t = host_tensor(DType::F32, Shape{4});
      ++reached;
      g.comms[size_t(r)]->all_reduce_sum(t);  // would wait forever for rank 1 without the abort
    });
    FAIL() << "run() returned";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rank 1: out of memory while loading"), std::string::npos) << e.what();
  }
  // The group cannot continue: every later run reports the same failure.
  EXPECT_THROW(g.workers.run([](int) {}), Error);
}

}  // namespace
}  // namespace gs
