#include "server/request_gate.h"

namespace gs::server {

RequestGate::RequestGate() : count_(std::make_shared<Count>()) {}

std::shared_ptr<RequestGate::Pass> RequestGate::admit() {
  std::lock_guard<std::mutex> lock(count_->mu);
  if (count_->closed) return nullptr;
  ++count_->in_flight;
  return std::shared_ptr<Pass>(new Pass(count_));
}

RequestGate::Pass::~Pass() {
  {
    std::lock_guard<std::mutex> lock(count_->mu);
    --count_->in_flight;
  }
  count_->cv.notify_all();
}

int RequestGate::close() {
  std::lock_guard<std::mutex> lock(count_->mu);
  count_->closed = true;
  return count_->in_flight;
}

bool RequestGate::closed() const {
  std::lock_guard<std::mutex> lock(count_->mu);
  return count_->closed;
}

int RequestGate::in_flight() const {
  std::lock_guard<std::mutex> lock(count_->mu);
  return count_->in_flight;
}

bool RequestGate::wait_empty(std::chrono::steady_clock::time_point deadline) const {
  std::unique_lock<std::mutex> lock(count_->mu);
  return count_->cv.wait_until(lock, deadline, [&] { return count_->in_flight == 0; });
}

}  // namespace gs::server
