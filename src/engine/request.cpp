#include "engine/request.h"

namespace gs {

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::None: return "none";
    case FinishReason::Stop: return "stop";
    case FinishReason::Length: return "length";
    case FinishReason::Abort: return "abort";
    case FinishReason::Error: return "error";
  }
  return "unknown";
}

void OutputChannel::push(RequestOutput out) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (out.finish != FinishReason::None) finished_ = true;
    q_.push_back(std::move(out));
  }
  cv_.notify_all();
}

std::optional<RequestOutput> OutputChannel::pop(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!cv_.wait_for(lock, timeout, [&] { return !q_.empty(); })) return std::nullopt;
  RequestOutput out = std::move(q_.front());
  q_.pop_front();
  return out;
}

bool OutputChannel::finished() const {
  std::lock_guard<std::mutex> lock(mu_);
  return finished_;
}

}  // namespace gs
