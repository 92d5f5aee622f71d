// An EngineClient for HTTP tests that behaves in time like the real engine: a thread emits one
// token per request every tick until max_tokens, an abort, or stop(). `active()` counts requests
// not yet finished, the stand-in for "pages held", so tests can check that a client that
// disconnects gets its request aborted. hold(true) pauses every request (no tokens) until
// hold(false), so a test can look at the server while requests are certainly still running.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "api/engine_client.h"

namespace gs::testing {

class TickingEngine : public api::EngineClient {
 public:
  explicit TickingEngine(std::chrono::milliseconds tick, int token = 50) : tick_(tick), token_(token) {
    thread_ = std::thread([this] { loop(); });
  }
  ~TickingEngine() override { stop(); }

  void stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
      stopping_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

  Engine::SubmitResult submit(GenerationRequest req) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return {false, 503, "engine stopped", ""};
    if (static_cast<int>(live_.size()) >= queue_limit) return {false, 429, "the queue is full (test limit)", ""};
    Live l{req.output, req.sampling.max_tokens, 0};
    live_[req.id] = l;
    ++submitted_;
    return {true, 200, "", ""};
  }
  void abort(const std::string& id) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = live_.find(id);
    if (it == live_.end()) return;
    aborted_.insert(id);
    RequestOutput o;
    o.finish = FinishReason::Abort;
    it->second.out->push(o);
    live_.erase(it);
  }
  EngineStats stats() const override {
    std::lock_guard<std::mutex> lock(mu_);
    EngineStats s;
    s.running = static_cast<int>(live_.size());
    s.pages_used[1] = static_cast<int>(live_.size());
    s.pages_total[1] = 100;
    return s;
  }
  RequestLimits limits() const override { return {INT32_MAX, 1 << 20, 2048}; }

  int active() const {
    std::lock_guard<std::mutex> lock(mu_);
    return static_cast<int>(live_.size());
  }
  int aborted() const {
    std::lock_guard<std::mutex> lock(mu_);
    return static_cast<int>(aborted_.size());
  }
  void hold(bool held) {
    std::lock_guard<std::mutex> lock(mu_);
    held_ = held;
  }
  int queue_limit = 1 << 30;

 private:
  struct Live {
    std::shared_ptr<OutputChannel> out;
    int max_tokens = 0, done = 0;
  };
  void loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stopping_) {
      cv_.wait_for(lock, tick_, [&] { return stopping_; });
      if (held_) continue;
      for (auto it = live_.begin(); it != live_.end();) {
        Live& l = it->second;
        RequestOutput o;
        o.new_tokens = {token_};
        o.completion_tokens = ++l.done;
        if (l.done >= l.max_tokens) o.finish = FinishReason::Length;
        l.out->push(o);
        it = o.finish != FinishReason::None ? live_.erase(it) : std::next(it);
      }
    }
    for (auto& [id, l] : live_) {
      RequestOutput o;
      o.finish = FinishReason::Abort;
      l.out->push(o);
    }
    live_.clear();
  }

  std::chrono::milliseconds tick_;
  int token_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  bool held_ = false;
  std::map<std::string, Live> live_;
  std::set<std::string> aborted_;
  int submitted_ = 0;
  std::thread thread_;
};

}  // namespace gs::testing
