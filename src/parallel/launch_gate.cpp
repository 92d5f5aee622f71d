#include "parallel/launch_gate.h"

#include <thread>

#include "core/error.h"

namespace gs {

void LaunchGate::arrive_and_wait() {
  if (size_ <= 1) return;
  const uint64_t gen = generation_.load(std::memory_order_acquire);
  if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 == size_) {
    // The last to arrive resets the count before opening the gate, so nobody can arrive at the
    // next one early and be counted here.
    arrived_.store(0, std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_release);
    return;
  }
  // The other ranks are a few launches behind at most: spin briefly, then give the core away.
  for (int spins = 0; generation_.load(std::memory_order_acquire) == gen; ++spins) {
    if (aborted_.load(std::memory_order_acquire))
      throw Error("tensor parallel: the group was aborted after another rank failed");
    if (spins > 4000) std::this_thread::yield();
  }
}

}  // namespace gs
