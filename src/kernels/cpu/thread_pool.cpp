#include "kernels/cpu/thread_pool.h"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "core/error.h"

namespace gs::cpu {

ThreadPool::ThreadPool(int threads) {
  threads = std::max(1, threads);
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  start_cv_.notify_all();
  for (auto& t : workers_) t.join();
}

int ThreadPool::default_threads() {
  if (const char* env = std::getenv("GS_CPU_THREADS")) {
    char* end = nullptr;
    long v = std::strtol(env, &end, 10);
    GS_CHECK(end != env && *end == '\0' && v >= 1 && v <= 4096,
             "GS_CPU_THREADS='{}' is not a thread count between 1 and 4096", env);
    return int(v);
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

void ThreadPool::parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  // About four chunks per thread balances uneven rows without much scheduling overhead.
  int64_t chunk = std::max(grain, (n + size() * 4 - 1) / (size() * 4));
  int64_t chunks = (n + chunk - 1) / chunk;
  if (chunks == 1 || workers_.empty()) {
    fn(0, n);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    job_ = &fn;
    job_n_ = n;
    job_chunk_ = chunk;
    job_chunks_ = chunks;
    next_chunk_ = 0;
    busy_ = int(workers_.size());
    error_ = nullptr;
    ++generation_;
  }
  start_cv_.notify_all();
  // The caller works too.
  for (;;) {
    int64_t c;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (next_chunk_ >= job_chunks_) break;
      c = next_chunk_++;
    }
    try {
      fn(c * chunk, std::min(n, (c + 1) * chunk));
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu_);
      if (!error_) error_ = std::current_exception();
      next_chunk_ = job_chunks_;
    }
  }
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [&] { return busy_ == 0; });
  job_ = nullptr;
  if (error_) std::rethrow_exception(error_);
}

void ThreadPool::worker_loop(int) {
  uint64_t seen = 0;
  for (;;) {
    std::unique_lock<std::mutex> lock(mu_);
    start_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
    if (stop_) return;
    seen = generation_;
    for (;;) {
      if (next_chunk_ >= job_chunks_) break;
      int64_t c = next_chunk_++;
      const auto* fn = job_;
      int64_t n = job_n_, chunk = job_chunk_;
      lock.unlock();
      try {
        (*fn)(c * chunk, std::min(n, (c + 1) * chunk));
      } catch (...) {
        lock.lock();
        if (!error_) error_ = std::current_exception();
        next_chunk_ = job_chunks_;
        continue;
      }
      lock.lock();
    }
    if (--busy_ == 0) done_cv_.notify_all();
  }
}

}  // namespace gs::cpu
