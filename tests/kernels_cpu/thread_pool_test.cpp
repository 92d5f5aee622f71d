#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <stdexcept>
#include <vector>

#include "core/error.h"
#include "kernels/cpu/thread_pool.h"

namespace gs::cpu {
namespace {

TEST(ThreadPool, VisitsEveryIndexExactlyOnce) {
  for (int threads : {1, 2, 5}) {
    ThreadPool pool(threads);
    for (int64_t n : {0, 1, 7, 1000, 12345}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      pool.parallel_for(n, 3, [&](int64_t a, int64_t b) {
        ASSERT_LE(a, b);
        for (int64_t i = a; i < b; ++i) hits[size_t(i)]++;
      });
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[size_t(i)].load(), 1) << "n=" << n << " i=" << i;
    }
  }
}

TEST(ThreadPool, RethrowsTheFirstErrorAndStaysUsable) {
  ThreadPool pool(4);
  EXPECT_THROW(pool.parallel_for(1000, 1,
                                 [&](int64_t a, int64_t) {
                                   if (a >= 500) throw std::runtime_error("boom");
                                 }),
               std::runtime_error);
  std::atomic<int64_t> sum{0};
  pool.parallel_for(100, 1, [&](int64_t a, int64_t b) {
    for (int64_t i = a; i < b; ++i) sum += i;
  });
  EXPECT_EQ(sum.load(), 4950);
}

TEST(ThreadPool, DefaultThreadsReadsTheEnvironment) {
  ::setenv("GS_CPU_THREADS", "3", 1);
  EXPECT_EQ(ThreadPool::default_threads(), 3);
  ::setenv("GS_CPU_THREADS", "lots", 1);
  EXPECT_THROW(ThreadPool::default_threads(), Error);
  ::unsetenv("GS_CPU_THREADS");
  EXPECT_GE(ThreadPool::default_threads(), 1);
}

}  // namespace
}  // namespace gs::cpu
