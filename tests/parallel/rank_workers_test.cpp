// The ranks' worker threads (parallel/rank_workers.h): a run reaches every rank, and while a run
// is in progress describe_ranks() (the stall report's text) says where each rank's thread is, from
// the marks it set (core/thread_activity.h); a run past its deadline reports them. Failures:
// local_communicator_test.cpp.
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

// A run past its deadline hands on_stuck the report once (the default ends the process), and the
// run still returns when the rank comes back.
TEST(RankWorkers, ARunPastItsDeadlineReportsWhereTheRanksAre) {
  RankWorkers workers(2, nullptr);
  std::atomic<bool> release{false};
  std::atomic<int> calls{0};
  std::string report;
  workers.set_on_stuck([&](const std::string& r) {
    report = r;
    calls++;
    release = true;  // the "stuck" rank may go on now
  });
  workers.run(
      [&](int r) {
        if (r == 0) return;
        ActivityScope here("stuck for the test");
        while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      },
      /*deadline_s=*/1);
  EXPECT_EQ(calls.load(), 1);
  EXPECT_NE(report.find("has not finished after 1 s"), std::string::npos) << report;
  EXPECT_NE(report.find("rank 1: stuck for the test"), std::string::npos) << report;
  // A quick run never calls it.
  workers.run([](int) {}, 1);
  EXPECT_EQ(calls.load(), 1);
}

}  // namespace
}  // namespace gs
