// What a worker thread is doing right now, readable from another thread. The tensor-parallel
// ranks' threads mark where they are (at a launch gate, enqueueing a collective, replaying a graph,
// waiting for the device) so that a step that stalls can say which rank waits where
// (RankWorkers' stall report) instead of hanging without a word.
#pragma once
#include <atomic>
#include <cstdint>

namespace gs {

struct ThreadActivity {
  std::atomic<const char*> where{"idle"};  // a string literal
  std::atomic<uint64_t> collectives{0};    // collectives enqueued so far
};

// The calling thread's record, or nullptr when nobody watches this thread (then marks cost a
// thread-local load and a branch).
inline ThreadActivity*& current_thread_activity() {
  thread_local ThreadActivity* activity = nullptr;
  return activity;
}

inline void mark_activity(const char* where) {
  if (ThreadActivity* a = current_thread_activity()) a->where.store(where, std::memory_order_relaxed);
}

// Marks `where` for a scope, then puts back what was marked before.
class ActivityScope {
 public:
  explicit ActivityScope(const char* where) : activity_(current_thread_activity()) {
    if (activity_) previous_ = activity_->where.exchange(where, std::memory_order_relaxed);
  }
  ~ActivityScope() {
    if (activity_) activity_->where.store(previous_, std::memory_order_relaxed);
  }
  ActivityScope(const ActivityScope&) = delete;
  ActivityScope& operator=(const ActivityScope&) = delete;

 private:
  ThreadActivity* activity_;
  const char* previous_ = nullptr;
};

}  // namespace gs
