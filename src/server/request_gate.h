// Admission of generation requests, and the count of those still being answered, so that a
// graceful shutdown knows when its drain is done. A request takes a pass when its handler starts
// and keeps it until its response is written (a stream: until its last event), so "nothing in
// flight" means every client has its whole answer. Closing the gate is atomic with admission: a
// request either got its pass before the gate closed, and is waited for, or is refused.
#pragma once
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>

namespace gs::server {

class RequestGate {
 public:
  // Held by one admitted request; dropping the last copy lets the request go (it may outlive the
  // gate: the count it belongs to is shared).
  class Pass;

  RequestGate();
  RequestGate(const RequestGate&) = delete;
  RequestGate& operator=(const RequestGate&) = delete;

  // A pass for a new request, or nullptr once the gate is closed.
  std::shared_ptr<Pass> admit();
  // Refuses every later request. Returns how many hold a pass now. Idempotent.
  int close();
  bool closed() const;
  int in_flight() const;
  // Waits until no request holds a pass, or until `deadline`; returns whether none does.
  bool wait_empty(std::chrono::steady_clock::time_point deadline) const;

 private:
  struct Count {
    mutable std::mutex mu;
    mutable std::condition_variable cv;
    int in_flight = 0;
    bool closed = false;
  };
  std::shared_ptr<Count> count_;
};

class RequestGate::Pass {
 public:
  ~Pass();
  Pass(const Pass&) = delete;
  Pass& operator=(const Pass&) = delete;

 private:
  friend class RequestGate;
  explicit Pass(std::shared_ptr<Count> count) : count_(std::move(count)) {}
  std::shared_ptr<Count> count_;
};

}  // namespace gs::server
