// One thread per tensor-parallel rank, kept for the life of the model (docs/scale-out.md: one
// process drives every GPU). run(fn) calls fn(rank) on every rank's thread at once and returns when
// all are done. When a rank throws, the group's communicators are aborted so that the other ranks,
// blocked in a collective, fail too instead of waiting forever; run() then throws the first
// failure, naming its rank. A run that takes longer than the stall interval (GS_TP_STALL_REPORT_S,
// default 30 s; 0 turns it off) logs where every rank's thread is (core/thread_activity.h), once per
// interval: a hung group says which rank waits for what. A run given a deadline (the steps of
// serving, not loading) that passes it calls on_stuck with that report; by default that logs it and
// ends the process, since no call can pull a rank's thread out of a stuck CUDA call, and a
// supervisor restarting the server beats a server that answers /health and never finishes a
// request.
#pragma once
#include <memory>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "core/thread_activity.h"
#include "parallel/communicator.h"

namespace gs {

class RankWorkers {
 public:
  // on_abort: called once when a rank fails (abort every rank's communicator).
  RankWorkers(int size, std::function<void()> on_abort);
  ~RankWorkers();
  RankWorkers(const RankWorkers&) = delete;
  RankWorkers& operator=(const RankWorkers&) = delete;

  int size() const { return int(threads_.size()); }
  // Runs fn(rank) on every rank's thread; one run at a time. After a failure every later run
  // throws the same error: a group with an aborted communicator cannot continue.
  // deadline_s > 0: on_stuck (below) is called once the run has taken that long.
  void run(const std::function<void(int rank)>& fn, int deadline_s = 0);
  // What a run past its deadline does (default: log the report and _Exit(70)); for tests.
  void set_on_stuck(std::function<void(const std::string& report)> fn) { on_stuck_ = std::move(fn); }
  // Where every rank's thread is ("rank 0: <its mark> (N collectives enqueued); rank 1: ..."): the
  // stall report's text, callable from any thread.
  std::string describe_ranks() const;

 private:
  void loop(int rank);

  std::vector<std::thread> threads_;
  std::function<void()> on_abort_;
  std::mutex mu_;
  std::condition_variable start_cv_, done_cv_;
  const std::function<void(int)>* job_ = nullptr;
  uint64_t job_id_ = 0;
  int pending_ = 0;
  bool stop_ = false;
  std::string failure_text_;
  std::unique_ptr<ThreadActivity[]> activity_;
  int stall_report_s_ = 30;
  std::function<void(const std::string&)> on_stuck_;
};

}  // namespace gs
