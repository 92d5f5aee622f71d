#include "server/connection_threads.h"

#include <algorithm>

#include "core/log.h"

namespace gs::server {

ConnectionThreads::ConnectionThreads(size_t max_threads) : max_threads_(std::max<size_t>(1, max_threads)) {}

ConnectionThreads::~ConnectionThreads() { shutdown(); }

void ConnectionThreads::enqueue(std::function<void()> fn) {
  std::lock_guard<std::mutex> lock(mu_);
  jobs_.push_back(std::move(fn));
  // An idle thread takes the job; otherwise start one, unless the limit is reached.
  if (idle_ >= jobs_.size()) {
    cv_.notify_one();
    return;
  }
  if (!stopping_ && threads_.size() < max_threads_) {
    threads_.emplace_back([this] { work(); });
    warned_ = false;
    return;
  }
  if (!warned_) {
    warned_ = true;
    log::warn("all {} HTTP connection threads are busy (open streams and kept-alive connections hold one each): "
              "new connections wait; raise --http-threads to serve more at once",
              max_threads_);
  }
}

void ConnectionThreads::work() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    ++idle_;
    cv_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
    --idle_;
    if (jobs_.empty()) return;  // stopping, nothing left to run
    auto job = std::move(jobs_.front());
    jobs_.pop_front();
    lock.unlock();
    job();
    lock.lock();
  }
}

void ConnectionThreads::shutdown() {
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    threads.swap(threads_);
  }
  cv_.notify_all();
  for (auto& t : threads) t.join();
}

ConnectionThreads::Counts ConnectionThreads::counts() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {threads_.size(), threads_.size() > idle_ ? threads_.size() - idle_ : 0, jobs_.size()};
}

}  // namespace gs::server
