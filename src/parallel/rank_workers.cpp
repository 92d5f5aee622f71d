#include "parallel/rank_workers.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>

#include <spdlog/spdlog.h>

#include "core/error.h"
#include "core/log.h"

namespace gs {

RankWorkers::RankWorkers(int size, std::function<void()> on_abort) : on_abort_(std::move(on_abort)) {
  GS_CHECK(size >= 1, "rank workers: {} ranks", size);
  activity_ = std::make_unique<ThreadActivity[]>(size_t(size));
  if (const char* s = std::getenv("GS_TP_STALL_REPORT_S")) stall_report_s_ = std::atoi(s);
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
  current_thread_activity() = &activity_[size_t(rank)];
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
    mark_activity("running its part of the step");
    try {
      (*job)(rank);
    } catch (const std::exception& e) {
      error = e.what();
    } catch (...) {
      error = "unknown exception";
    }
    mark_activity(error.empty() ? "done with the step" : "failed");
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

void RankWorkers::run(const std::function<void(int rank)>& fn, int deadline_s) {
  std::unique_lock<std::mutex> lk(mu_);
  if (!failure_text_.empty()) throw Error("tensor parallel: {}", failure_text_);
  job_ = &fn;
  pending_ = size();
  ++job_id_;
  start_cv_.notify_all();
  using Clock = std::chrono::steady_clock;
  const auto started = Clock::now();
  const auto never = started + std::chrono::hours(24 * 365);
  const auto deadline = deadline_s > 0 ? started + std::chrono::seconds(deadline_s) : never;
  auto next_report = stall_report_s_ > 0 ? started + std::chrono::seconds(stall_report_s_) : never;
  bool stuck_called = false;
  while (!done_cv_.wait_until(lk, std::min(next_report, stuck_called ? never : deadline),
                              [&] { return pending_ == 0; })) {
    const auto now = Clock::now();
    const long long s = std::chrono::duration_cast<std::chrono::seconds>(now - started).count();
    if (!stuck_called && now >= deadline) {
      stuck_called = true;
      const std::string report =
          fmt::format("tensor parallel: a step has not finished after {} s (GS_TP_STEP_TIMEOUT_S); {}", s,
                      describe_ranks());
      lk.unlock();
      if (on_stuck_) {
        on_stuck_(report);
      } else {
        log::error("{}; stopping the process: a stuck rank cannot be recovered", report);
        spdlog::default_logger()->flush();
        std::_Exit(70);
      }
      lk.lock();
    }
    if (now >= next_report) {
      log::warn("tensor parallel: a step has run for {} s; {}", s, describe_ranks());
      next_report += std::chrono::seconds(stall_report_s_);
    }
  }
  job_ = nullptr;
  if (!failure_text_.empty()) throw Error("tensor parallel: {}", failure_text_);
}

std::string RankWorkers::describe_ranks() const {
  std::string out;
  for (int r = 0; r < size(); ++r) {
    const ThreadActivity& a = activity_[size_t(r)];
    out += fmt::format("{}rank {}: {} ({} collectives enqueued)", r ? "; " : "", r,
                       a.where.load(std::memory_order_relaxed), a.collectives.load(std::memory_order_relaxed));
  }
  return out;
}

}  // namespace gs
