#include "server/connection_threads.h"

#include <algorithm>

#include "core/log.h"

namespace gs::server {

namespace {
// How often the probe lane looks again at waiting connections that have not sent enough to tell
// what they are (a new connection wakes it at once).
constexpr auto kProbeRescan = std::chrono::milliseconds(20);
}  // namespace

ConnectionThreads::ConnectionThreads(size_t max_threads, Serve serve, ProbeLane probes)
    : max_threads_(std::max<size_t>(1, max_threads)), serve_(std::move(serve)), probes_(std::move(probes)) {}

ConnectionThreads::~ConnectionThreads() { shutdown(); }

void ConnectionThreads::enqueue(int fd) {
  std::lock_guard<std::mutex> lock(mu_);
  jobs_.push_back({fd});
  // An idle thread takes the connection; otherwise start one, unless the limit is reached.
  if (idle_ >= jobs_.size()) {
    cv_.notify_one();
    return;
  }
  if (!stopping_ && threads_.size() < max_threads_) {
    threads_.emplace_back([this] { work(); });
    warned_ = false;
    return;
  }
  if (probes_.check && !probe_thread_.joinable() && !stopping_) probe_thread_ = std::thread([this] { probe_lane(); });
  probe_cv_.notify_one();
  if (!warned_) {
    warned_ = true;
    log::warn("all {} HTTP connection threads are busy (open streams and kept-alive connections hold one each): "
              "new connections wait (/health, /metrics and /v1/models are still answered); raise --http-threads "
              "to serve more at once",
              max_threads_);
  }
}

void ConnectionThreads::work() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    ++idle_;
    cv_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
    --idle_;
    if (jobs_.empty()) return;  // stopping, nothing left to serve
    int fd = jobs_.front().fd;
    jobs_.pop_front();
    lock.unlock();
    serve_(fd);
    lock.lock();
  }
}

int ConnectionThreads::take_probe(bool& undecided) {
  undecided = false;
  for (auto it = jobs_.begin(); it != jobs_.end(); ++it) {
    if (!it->maybe_probe) continue;
    switch (probes_.check(it->fd)) {
      case ProbeCheck::Probe: {
        int fd = it->fd;
        jobs_.erase(it);  // the others keep their order
        return fd;
      }
      case ProbeCheck::NotProbe: it->maybe_probe = false; break;
      case ProbeCheck::NotYet: undecided = true; break;
    }
  }
  return -1;
}

void ConnectionThreads::probe_lane() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    // Without a queue every connection, a probe's too, has a thread at once.
    if (!saturated()) {
      probe_cv_.wait(lock, [this] { return stopping_ || saturated(); });
      continue;
    }
    bool undecided = false;
    int fd = take_probe(undecided);
    if (fd >= 0) {
      ++probes_served_;
      lock.unlock();
      probes_.serve(fd);
      lock.lock();
    } else if (undecided) {
      probe_cv_.wait_for(lock, kProbeRescan);
    } else {
      probe_cv_.wait(lock);  // until the next connection arrives
    }
  }
}

void ConnectionThreads::shutdown() {
  std::vector<std::thread> threads;
  std::thread probe_thread;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    threads.swap(threads_);
    probe_thread.swap(probe_thread_);
  }
  cv_.notify_all();
  probe_cv_.notify_all();
  if (probe_thread.joinable()) probe_thread.join();
  for (auto& t : threads) t.join();
}

ConnectionThreads::Counts ConnectionThreads::counts() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {threads_.size(), threads_.size() > idle_ ? threads_.size() - idle_ : 0, jobs_.size(), probes_served_};
}

}  // namespace gs::server
