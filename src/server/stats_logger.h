// A periodic log line of what the engine did since the last one, as serving engineers read it in
// vLLM's and SGLang's logs: throughputs, running and waiting requests, KV pool use, prefix-cache
// hits, and the average step time by kind. Nothing is logged while the engine is idle.
#pragma once
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "engine/engine.h"

namespace gs::server {

// The line for the interval from `prev` to `cur` (`seconds` long); nullopt when nothing ran, was
// waiting or was generated in it.
std::optional<std::string> format_stats_line(const EngineStats& prev, const EngineStats& cur, double seconds);

class StatsLogger {
 public:
  // Calls `read` every `interval` and logs format_stats_line of the change. interval <= 0: off.
  StatsLogger(std::function<EngineStats()> read, std::chrono::duration<double> interval);
  ~StatsLogger();  // stops and joins
  StatsLogger(const StatsLogger&) = delete;
  StatsLogger& operator=(const StatsLogger&) = delete;

 private:
  void loop();

  std::function<EngineStats()> read_;
  std::chrono::duration<double> interval_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace gs::server
