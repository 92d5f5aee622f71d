// The gate that keeps tensor-parallel ranks' host threads in step around collectives
// (parallel/launch_gate.h): nobody passes round k before every rank reached it, and abort() frees
// the waiting ranks with an error instead of leaving them behind a failed rank forever.
#include "parallel/launch_gate.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "core/error.h"

namespace gs {
namespace {

TEST(LaunchGate, NoRankPassesARoundBeforeEveryRankReachedIt) {
  for (int ranks : {2, 3, 4}) {
    LaunchGate gate(ranks);
    constexpr int kRounds = 2000;
    std::vector<std::atomic<int>> reached(kRounds);
    std::atomic<bool> early{false};
    std::vector<std::thread> threads;
    for (int r = 0; r < ranks; ++r)
      threads.emplace_back([&, r] {
        for (int k = 0; k < kRounds; ++k) {
          if ((k + r) % 7 == 0) std::this_thread::yield();  // ranks arrive in varying orders
          reached[size_t(k)].fetch_add(1);
          gate.arrive_and_wait();
          if (reached[size_t(k)].load() != ranks) early = true;
        }
      });
    for (auto& t : threads) t.join();
    EXPECT_FALSE(early) << ranks << " ranks: a rank left a round before all had reached it";
  }
}

TEST(LaunchGate, OneRankPassesAtOnce) {
  LaunchGate gate(1);
  gate.arrive_and_wait();
  gate.arrive_and_wait();
}

TEST(LaunchGate, AbortReleasesTheWaitingRanksWithAnError) {
  LaunchGate gate(3);
  std::atomic<int> errors{0};
  std::vector<std::thread> waiting;
  for (int r = 0; r < 2; ++r)  // the third rank failed and never arrives
    waiting.emplace_back([&] {
      try {
        gate.arrive_and_wait();
      } catch (const Error&) {
        ++errors;
      }
    });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  gate.abort();
  for (auto& t : waiting) t.join();
  EXPECT_EQ(errors.load(), 2);
}

}  // namespace
}  // namespace gs
