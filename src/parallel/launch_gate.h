#pragma once
#include <atomic>
#include <cstdint>

namespace gs {

// Keeps the host threads of one process's tensor-parallel ranks in step around every collective
// they enqueue on their GPUs. CUDA launches are asynchronous, so a rank's thread can run far ahead
// of its GPU: it can enqueue a whole prefill, all its all-reduces included, while its GPU already
// spins in the first all-reduce waiting for a rank whose thread has not launched that far. The
// ranks' threads share the process's launch resources, and once the leading thread has filled
// them, the lagging thread's next launch waits for them too: its all-reduce never gets enqueued
// and the group hangs (seen on 2x H200: TP2 decode hung in its first steps whether the all-reduce
// was NCCL's or ours, and small prefills hung intermittently until our all-reduce's watchdog
// trapped). Meeting at a gate before and after each collective bounds the lead to the launches
// between two collectives. Graph replays and captures need no gate: a replay is one launch a step,
// and the ranks meet at the end of every step anyway (RankWorkers::run).
class LaunchGate {
 public:
  explicit LaunchGate(int size) : size_(size) {}

  // Returns once every rank has arrived; throws gs::Error once abort() was called.
  void arrive_and_wait();
  // Releases every waiting rank with an error (one rank failed; the others must not wait for it).
  void abort() { aborted_.store(true, std::memory_order_release); }

 private:
  const int size_;
  std::atomic<int> arrived_{0};
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> aborted_{false};
};

}  // namespace gs
