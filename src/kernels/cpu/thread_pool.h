// A small fixed pool of worker threads for the CPU backend's big loops. parallel_for splits an
// index range into contiguous chunks, runs them on the workers and the calling thread, and returns
// when all are done. One loop at a time: the backend's ops are issued from one thread.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace gs::cpu {

class ThreadPool {
 public:
  explicit ThreadPool(int threads);  // total threads including the caller; >= 1
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return int(workers_.size()) + 1; }

  // Calls fn(begin, end) over [0, n) in chunks of at least `grain` indices. Exceptions thrown by
  // fn are rethrown on the calling thread (the first one wins).
  void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

  // Threads to use by default: GS_CPU_THREADS if set, else the hardware concurrency.
  static int default_threads();

 private:
  void worker_loop(int index);

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable start_cv_, done_cv_;
  const std::function<void(int64_t, int64_t)>* job_ = nullptr;
  int64_t job_n_ = 0, job_chunk_ = 0, job_chunks_ = 0;
  int64_t next_chunk_ = 0;   // guarded by mu_
  int busy_ = 0;             // workers still inside the current job
  uint64_t generation_ = 0;  // bumps once per job so workers wake exactly once
  bool stop_ = false;
  std::exception_ptr error_;
};

}  // namespace gs::cpu
