// ConnectionThreads: every connection gets a thread of its own while under the limit (long-lived
// connections never starve later ones), threads are reused, past the limit work waits in order
// instead of being dropped, and the probe lane answers probes among the waiting out of turn.
// Connections here are plain numbers handed to a serve function. (http_server_test.cpp checks the
// whole server with more simultaneous streams than the old fixed pool had threads, and /health
// with every thread taken.)
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
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
  Gate gate;
  ConnectionThreads pool(static_cast<size_t>(n) + 10, [&](int) { gate.wait(); });
  for (int i = 0; i < n; ++i) pool.enqueue(i);
  ASSERT_TRUE(gate.wait_for_waiting(n)) << "some job never started";
  auto c = pool.counts();
  EXPECT_EQ(c.threads, static_cast<size_t>(n));
  EXPECT_EQ(c.busy, static_cast<size_t>(n));
  EXPECT_EQ(c.waiting, 0u);
  gate.open();
  pool.shutdown();
}

TEST(ConnectionThreads, IdleThreadsAreReused) {
  std::atomic<int> done{0};
  ConnectionThreads pool(64, [&](int) { ++done; });
  for (int round = 0; round < 5; ++round) {
    for (int i = 0; i < 4; ++i) pool.enqueue(i);
    while (done < 4 * (round + 1)) std::this_thread::sleep_for(1ms);
    // Wait until the four threads are idle again, then the next round must not start more.
    for (int spin = 0; spin < 1000 && pool.counts().busy > 0; ++spin) std::this_thread::sleep_for(1ms);
  }
  EXPECT_LE(pool.counts().threads, 4u);
}

TEST(ConnectionThreads, PastTheLimitJobsWaitInOrderAndAllRun) {
  Gate gate;
  std::mutex mu;
  std::vector<int> order;
  ConnectionThreads pool(2, [&](int id) {
    if (id < 0) return gate.wait();
    std::lock_guard<std::mutex> lock(mu);
    order.push_back(id);
  });
  pool.enqueue(-1);
  pool.enqueue(-2);
  ASSERT_TRUE(gate.wait_for_waiting(2));
  for (int i = 0; i < 6; ++i) pool.enqueue(i);
  EXPECT_EQ(pool.counts().threads, 2u);
  EXPECT_EQ(pool.counts().waiting, 6u);
  gate.open();
  pool.shutdown();  // runs what is queued before joining
  // Two threads take the jobs in order, but may finish them in either order: all six ran.
  std::sort(order.begin(), order.end());
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4, 5}));
}

TEST(ConnectionThreads, OneThreadRunsWaitingJobsFirstComeFirstServed) {
  Gate gate;
  std::vector<int> order;  // only the one thread touches it
  ConnectionThreads pool(1, [&](int id) { id < 0 ? gate.wait() : order.push_back(id); });
  pool.enqueue(-1);
  ASSERT_TRUE(gate.wait_for_waiting(1));
  for (int i = 0; i < 6; ++i) pool.enqueue(i);
  EXPECT_EQ(pool.counts().waiting, 6u);
  gate.open();
  pool.shutdown();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4, 5}));
}

// What a waiting connection has "sent", as the probe lane's check sees it.
class FakeInputs {
 public:
  void set(int id, ProbeCheck c) {
    std::lock_guard<std::mutex> lock(mu_);
    checks_[id] = c;
  }
  ProbeCheck check(int id) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = checks_.find(id);
    return it == checks_.end() ? ProbeCheck::NotYet : it->second;
  }

 private:
  std::mutex mu_;
  std::map<int, ProbeCheck> checks_;
};

TEST(ConnectionThreads, TheProbeLaneAnswersWaitingProbesOutOfTurnAndLeavesTheRestInOrder) {
  Gate gate;
  FakeInputs inputs;
  std::mutex mu;
  std::vector<int> served, probed;
  std::condition_variable probed_cv;
  ConnectionThreads pool(
      2,
      [&](int id) {
        if (id < 0) return gate.wait();
        std::lock_guard<std::mutex> lock(mu);
        served.push_back(id);
      },
      {[&](int id) { return inputs.check(id); },
       [&](int id) {
         std::lock_guard<std::mutex> lock(mu);
         probed.push_back(id);
         probed_cv.notify_all();
       }});
  auto wait_probed = [&](size_t n) {
    std::unique_lock<std::mutex> lock(mu);
    return probed_cv.wait_for(lock, 5s, [&] { return probed.size() >= n; });
  };
  pool.enqueue(-1);
  pool.enqueue(-2);
  ASSERT_TRUE(gate.wait_for_waiting(2));
  // Both threads are taken: 1..5 wait. 2 is a probe; 4 has not said yet what it is.
  inputs.set(1, ProbeCheck::NotProbe);
  inputs.set(2, ProbeCheck::Probe);
  inputs.set(3, ProbeCheck::NotProbe);
  inputs.set(5, ProbeCheck::NotProbe);
  for (int i = 1; i <= 5; ++i) pool.enqueue(i);
  ASSERT_TRUE(wait_probed(1)) << "the waiting probe was never answered";
  // 4 turns out to be a probe too, later: the lane looks again.
  inputs.set(4, ProbeCheck::Probe);
  ASSERT_TRUE(wait_probed(2)) << "a probe that became recognisable later was never answered";
  {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_EQ(probed, (std::vector<int>{2, 4}));
    EXPECT_TRUE(served.empty()) << "an ordinary connection jumped the queue";
  }
  EXPECT_EQ(pool.counts().waiting, 3u);
  EXPECT_EQ(pool.counts().probes_served, 2u);
  gate.open();
  pool.shutdown();
  // The rest were served by the connection threads; with two threads they may finish in either
  // order, but none was lost or served twice.
  std::sort(served.begin(), served.end());
  EXPECT_EQ(served, (std::vector<int>{1, 3, 5}));
}

TEST(ConnectionThreads, NoProbeLaneWhileThreadsAreFree) {
  // Under the limit every connection, a probe's too, gets a thread at once: the lane never runs.
  std::atomic<int> served{0}, probed{0};
  ConnectionThreads pool(
      8, [&](int) { ++served; },
      {[](int) { return ProbeCheck::Probe; }, [&](int) { ++probed; }});
  for (int i = 0; i < 4; ++i) pool.enqueue(i);
  pool.shutdown();
  EXPECT_EQ(served, 4);
  EXPECT_EQ(probed, 0);
}

}  // namespace
}  // namespace gs::server
