// The ranks' worker threads (parallel/rank_workers.h): a run reaches every rank, and while a run
// is in progress describe_ranks() (the stall report's text) says where each rank's thread is, from
// the marks it set (core/thread_activity.h). Failures: local_communicator_test.cpp.
#include "parallel/rank_workers.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>


namespace gs {
namespace {

TEST(RankWorkers, EveryRankRunsTheJob) {
  RankWorkers workers(3, nullptr);
  std::atomic<int> mask{0};
  workers.run([&](int r) { mask |= 1 << r; });
  EXPECT_EQ(mask.load(), 0b111);
}

TEST(RankWorkers, DescribeRanksSaysWhereEachThreadIs) {
  RankWorkers workers(2, nullptr);
  std::atomic<bool> release{false};
  std::thread driver([&] {
    workers.run([&](int r) {
      if (r == 0) return;  // done with its part
      current_thread_activity()->collectives.fetch_add(3);
      ActivityScope here("waiting for the test");
      while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    });
  });
  std::string text;
  auto both = [&] {
    return text.find("rank 1: waiting for the test") != std::string::npos &&
           text.find("rank 0: done with the step") != std::string::npos;
  };
  for (int i = 0; i < 5000 && !both(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    text = workers.describe_ranks();
  }
  release = true;
  driver.join();
  EXPECT_NE(text.find("rank 0: done with the step (0 collectives enqueued)"), std::string::npos) << text;
  EXPECT_NE(text.find("rank 1: waiting for the test (3 collectives enqueued)"), std::string::npos) << text;
  // After the run both ranks are done (the scope put back the rank's earlier mark first).
  EXPECT_NE(workers.describe_ranks().find("rank 1: done with the step"), std::string::npos) << workers.describe_ranks();
}

}  // namespace
}  // namespace gs
