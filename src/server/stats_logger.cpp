#include "server/stats_logger.h"

#include <fmt/format.h>

#include "core/log.h"

namespace gs::server {

std::optional<std::string> format_stats_line(const EngineStats& prev, const EngineStats& cur, double seconds) {
  const uint64_t gen = cur.generation_tokens - prev.generation_tokens;
  const uint64_t prompt = cur.prompt_tokens - prev.prompt_tokens;
  if (gen == 0 && prompt == 0 && cur.running == 0 && cur.waiting == 0) return std::nullopt;
  const double s = seconds > 0 ? seconds : 1.0;
  auto pct = [](double part, double whole) { return whole > 0 ? 100.0 * part / whole : 0.0; };
  std::string line = fmt::format("engine: running {}, waiting {}, prompt {:.1f} tok/s, generation {:.1f} tok/s",
                                 cur.running, cur.waiting, double(prompt) / s, double(gen) / s);
  line += fmt::format(", KV used sliding {:.1f}% full {:.1f}%", pct(cur.pages_used[0], cur.pages_total[0]),
                      pct(cur.pages_used[1], cur.pages_total[1]));
  const uint64_t queries = cur.prefix_queries - prev.prefix_queries;
  if (queries > 0) line += fmt::format(", prefix hits {:.1f}%", pct(double(cur.prefix_hits - prev.prefix_hits), double(queries)));
  const char* kinds[2] = {"decode", "prefill"};
  for (int k = 0; k < 2; ++k) {
    const uint64_t n = cur.steps_of_kind[k] - prev.steps_of_kind[k];
    if (n > 0) line += fmt::format(", {} step {:.2f} ms", kinds[k], 1e3 * (cur.step_seconds[k] - prev.step_seconds[k]) / double(n));
  }
  const uint64_t rounds = cur.spec_drafts - prev.spec_drafts;
  if (rounds > 0) {
    const double accepted = double(cur.spec_accepted_tokens - prev.spec_accepted_tokens);
    const double drafted = double(cur.spec_draft_tokens - prev.spec_draft_tokens);
    line += fmt::format(", accept length {:.2f} (drafts accepted {:.1f}%)", 1.0 + accepted / double(rounds),
                        pct(accepted, drafted));
  }
  const uint64_t preempted = cur.preemptions - prev.preemptions;
  if (preempted > 0) line += fmt::format(", {} preempted", preempted);
  return line;
}

StatsLogger::StatsLogger(std::function<EngineStats()> read, std::chrono::duration<double> interval)
    : read_(std::move(read)), interval_(interval) {
  if (interval_.count() > 0) thread_ = std::thread([this] { loop(); });
}

StatsLogger::~StatsLogger() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void StatsLogger::loop() {
  EngineStats prev = read_();
  auto last = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lock(mu_);
  while (!cv_.wait_for(lock, interval_, [&] { return stop_; })) {
    lock.unlock();
    const EngineStats cur = read_();
    const auto now = std::chrono::steady_clock::now();
    if (auto line = format_stats_line(prev, cur, std::chrono::duration<double>(now - last).count())) log::info("{}", *line);
    prev = cur;
    last = now;
    lock.lock();
  }
}

}  // namespace gs::server
