// A one-line progress bar on stderr ("requests  12/100 [=====>     ] 3.4 s"), redrawn from its own
// thread a few times a second, like the tqdm bar of vLLM's and SGLang's scripts.
#pragma once
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace gs::bench {

class ProgressBar {
 public:
  // enabled=false: draws nothing (--disable-tqdm).
  ProgressBar(std::string label, int total, bool enabled);
  ~ProgressBar();  // draws the final state and ends the line
  void advance() { done_.fetch_add(1, std::memory_order_relaxed); }
  void finish();

 private:
  void draw(bool final) const;

  std::string label_;
  int total_;
  bool enabled_;
  std::atomic<int> done_{0};
  std::chrono::steady_clock::time_point start_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread drawer_;
};

}  // namespace gs::bench
