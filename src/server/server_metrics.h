// The server's /metrics: engine state (requests, KV pages per pool, prefix cache, token counters)
// read at scrape time, plus request timings and outcomes the API layer reports as they happen.
// Prometheus text exposition format, version 0.0.4.
#pragma once
#include <atomic>
#include <map>
#include <mutex>
#include <string>

#include "api/generation_session.h"
#include "engine/engine.h"
#include "server/histogram.h"

namespace gs::server {

class ServerMetrics : public api::RequestObserver {
 public:
  ServerMetrics();

  void on_first_token(double seconds) override;
  void on_inter_token(double seconds, int tokens) override;
  void on_choice_finished(const std::string& finish_reason) override;
  void on_request_finished(const api::Usage& usage) override;
  // An HTTP request answered with an error status (400, 401, 413, 429, ...).
  void on_http_error(int status);
  // The server stopped accepting work and finishes what it has (a graceful shutdown).
  void set_draining(bool draining) { draining_ = draining; }

  std::string render(const EngineStats& engine) const;

 private:
  Histogram ttft_, itl_;
  mutable std::mutex mu_;
  std::map<std::string, uint64_t> finished_by_reason_;
  std::map<int, uint64_t> http_errors_;
  std::atomic<uint64_t> requests_finished_{0}, cached_prompt_tokens_{0};
  std::atomic<bool> draining_{false};
};

}  // namespace gs::server
