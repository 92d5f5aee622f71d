#include "parallel/rank_workers.h"

#include "core/error.h"

namespace gs {

RankWorkers::RankWorkers(int size, std::function<void()> on_abort) : on_abort_(std::move(on_abort)) {
  GS_CHECK(size >= 1, "rank workers: {} ranks", size);
  for (int r = 0; r < size; ++r) threads_.emplace_back([this, r] { loop(r); });
}

RankWorkers::~RankWorkers() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  start_cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void RankWorkers::loop(int rank) {
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int)>* job;
    {
      std::unique_lock<std::mutex> lk(mu_);
      start_cv_.wait(lk, [&] { return stop_ || job_id_ != seen; });
      if (stop_) return;
      seen = job_id_;
      job = job_;
    }
    std::string error;
    try {
      (*job)(rank);
    } catch (const std::exception& e) {
      error = e.what();
    } catch (...) {
      error = "unknown exception";
    }
    bool first_failure = false;
    {
      std::lock_guard<std::mutex> lk(mu_);
      // The first failure is the cause; the others are usually the abort it triggered.
      if (!error.empty() && failure_text_.empty()) {
        failure_text_ = error.find("rank ") == 0 ? error : "rank " + std::to_string(rank) + ": " + error;
        first_failure = true;
      }
      if (--pending_ == 0) done_cv_.notify_all();
    }
    if (first_failure && on_abort_) on_abort_();
  }
}

void RankWorkers::run(const std::function<void(int rank)>& fn) {
  std::unique_lock<std::mutex> lk(mu_);
  if (!failure_text_.empty()) throw Error("tensor parallel: {}", failure_text_);
  job_ = &fn;
  pending_ = size();
  ++job_id_;
  start_cv_.notify_all();
  done_cv_.wait(lk, [&] { return pending_ == 0; });
  job_ = nullptr;
  if (!failure_text_.empty()) throw Error("tensor parallel: {}", failure_text_);
}

}  // namespace gs
