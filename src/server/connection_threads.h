// The threads that serve HTTP connections. cpp-httplib runs each accepted connection on one task
// of its task queue for the connection's whole life: a stream holds its thread until the last
// event, and a kept-alive connection holds it between requests, for as long as the client keeps
// the connection open. A fixed pool of N threads (httplib's ThreadPool) therefore lets client
// N+1 wait, silently, until one of the first N closes its connection, which a benchmark's or a
// proxy's pooled connections never do. ConnectionThreads starts a thread whenever a connection
// arrives and none is idle, up to `max_threads`; past that, connections wait in order and a
// warning says why. Threads are kept for reuse once started (idle ones only wait on a lock).
#pragma once
#include <httplib.h>

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace gs::server {

class ConnectionThreads final : public httplib::TaskQueue {
 public:
  explicit ConnectionThreads(size_t max_threads);
  ~ConnectionThreads() override;
  ConnectionThreads(const ConnectionThreads&) = delete;
  ConnectionThreads& operator=(const ConnectionThreads&) = delete;

  void enqueue(std::function<void()> fn) override;
  // Runs what is queued, then joins every thread. Idempotent.
  void shutdown() override;

  struct Counts {
    size_t threads = 0, busy = 0, waiting = 0;
  };
  Counts counts() const;

 private:
  void work();

  const size_t max_threads_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  std::vector<std::thread> threads_;
  size_t idle_ = 0;
  bool stopping_ = false;
  bool warned_ = false;  // the limit was hit (warned once until load drops below it)
};

}  // namespace gs::server
