#include "bench/progress_bar.h"

#include <fmt/format.h>

#include <cstdio>

namespace gs::bench {

ProgressBar::ProgressBar(std::string label, int total, bool enabled)
    : label_(std::move(label)), total_(total), enabled_(enabled), start_(std::chrono::steady_clock::now()) {
  if (!enabled_) return;
  drawer_ = std::thread([this] {
    std::unique_lock lock(mu_);
    while (!cv_.wait_for(lock, std::chrono::milliseconds(200), [this] { return stop_; })) draw(false);
  });
}

ProgressBar::~ProgressBar() { finish(); }

void ProgressBar::finish() {
  if (!enabled_) return;
  {
    std::lock_guard lock(mu_);
    if (stop_) return;
    stop_ = true;
  }
  cv_.notify_all();
  drawer_.join();
  draw(true);
}

void ProgressBar::draw(bool final) const {
  constexpr int kWidth = 30;
  const int done = done_.load(std::memory_order_relaxed);
  const int filled = total_ > 0 ? done * kWidth / total_ : kWidth;
  std::string bar(static_cast<size_t>(filled), '=');
  if (filled < kWidth) bar += '>';
  bar.resize(kWidth, ' ');
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double rate = secs > 0 ? done / secs : 0;
  std::fprintf(stderr, "\r%s", fmt::format("{} {:>{}}/{} [{}] {:.1f} s, {:.2f} req/s", label_, done,
                                            std::to_string(total_).size(), total_, bar, secs, rate)
                                    .c_str());
  if (final) std::fputc('\n', stderr);
  std::fflush(stderr);
}

}  // namespace gs::bench
