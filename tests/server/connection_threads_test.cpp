// ConnectionThreads: every connection gets a thread of its own while under the limit (long-lived
// connections never starve later ones), threads are reused, and past the limit work waits in
// order instead of being dropped. (http_server_test.cpp checks the whole server with more
// simultaneous streams than the old fixed pool had threads.)
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <random>
#include <thread>

#include "server/connection_threads.h"

namespace gs::server {
namespace {

using namespace std::chrono_literals;

// Jobs that block until released, like connections that stay open.
class Gate {
 public:
  void wait() {
    std::unique_lock<std::mutex> lock(mu_);
    ++waiting_;
    cv_.notify_all();
    cv_.wait(lock, [&] { return open_; });
  }
  void open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  bool wait_for_waiting(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, 5s, [&] { return waiting_ >= n; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int waiting_ = 0;
  bool open_ = false;
};

TEST(ConnectionThreads, EveryBlockedJobGetsItsOwnThreadUpToTheLimit) {
  std::mt19937 rng(std::random_device{}());
  const int n = 20 + static_cast<int>(rng() % 40);
  ConnectionThreads pool(static_cast<size_t>(n) + 10);
  Gate gate;
  for (int i = 0; i < n; ++i) pool.enqueue([&] { gate.wait(); });
  ASSERT_TRUE(gate.wait_for_waiting(n)) << "some job never started";
  auto c = pool.counts();
  EXPECT_EQ(c.threads, static_cast<size_t>(n));
  EXPECT_EQ(c.busy, static_cast<size_t>(n));
  EXPECT_EQ(c.waiting, 0u);
  gate.open();
  pool.shutdown();
}

TEST(ConnectionThreads, IdleThreadsAreReused) {
  ConnectionThreads pool(64);
  std::atomic<int> done{0};
  for (int round = 0; round < 5; ++round) {
    for (int i = 0; i < 4; ++i) pool.enqueue([&] { ++done; });
    while (done < 4 * (round + 1)) std::this_thread::sleep_for(1ms);
    // Wait until the four threads are idle again, then the next round must not start more.
    for (int spin = 0; spin < 1000 && pool.counts().busy > 0; ++spin) std::this_thread::sleep_for(1ms);
  }
  EXPECT_LE(pool.counts().threads, 4u);
}

TEST(ConnectionThreads, PastTheLimitJobsWaitInOrderAndAllRun) {
  ConnectionThreads pool(2);
  Gate gate;
  std::mutex mu;
  std::vector<int> order;
  pool.enqueue([&] { gate.wait(); });
  pool.enqueue([&] { gate.wait(); });
  ASSERT_TRUE(gate.wait_for_waiting(2));
  for (int i = 0; i < 6; ++i) {
    pool.enqueue([&, i] {
      std::lock_guard<std::mutex> lock(mu);
      order.push_back(i);
    });
  }
  EXPECT_EQ(pool.counts().threads, 2u);
  EXPECT_EQ(pool.counts().waiting, 6u);
  gate.open();
  pool.shutdown();  // runs what is queued before joining
  // Two threads take the jobs in order, but may finish them in either order: all six ran.
  std::sort(order.begin(), order.end());
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4, 5}));
}

TEST(ConnectionThreads, OneThreadRunsWaitingJobsFirstComeFirstServed) {
  ConnectionThreads pool(1);
  Gate gate;
  std::vector<int> order;  // only the one thread touches it
  pool.enqueue([&] { gate.wait(); });
  ASSERT_TRUE(gate.wait_for_waiting(1));
  for (int i = 0; i < 6; ++i) pool.enqueue([&, i] { order.push_back(i); });
  EXPECT_EQ(pool.counts().waiting, 6u);
  gate.open();
  pool.shutdown();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4, 5}));
}

}  // namespace
}  // namespace gs::server
