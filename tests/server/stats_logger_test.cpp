// The periodic engine stats line: what it reports for an interval, and silence when idle.
#include "server/stats_logger.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace gs::server {
namespace {

EngineStats busy_stats() {
  EngineStats s;
  s.running = 3;
  s.waiting = 1;
  s.prompt_tokens = 1000;
  s.generation_tokens = 500;
  s.pages_used[0] = 25;
  s.pages_total[0] = 100;
  s.pages_used[1] = 10;
  s.pages_total[1] = 40;
  s.prefix_queries = 800;
  s.prefix_hits = 200;
  s.steps_of_kind[EngineStats::kDecodeStep] = 100;
  s.step_seconds[EngineStats::kDecodeStep] = 0.5;
  s.steps_of_kind[EngineStats::kPrefillStep] = 4;
  s.step_seconds[EngineStats::kPrefillStep] = 0.1;
  return s;
}

TEST(StatsLine, ReportsTheIntervalNotTheTotals) {
  EngineStats prev = busy_stats(), cur = busy_stats();
  cur.prompt_tokens += 2000;       // 1000 tok/s over 2 s
  cur.generation_tokens += 300;    // 150 tok/s
  cur.prefix_queries += 1000;
  cur.prefix_hits += 250;          // 25% of this interval's lookups
  cur.steps_of_kind[EngineStats::kDecodeStep] += 40;
  cur.step_seconds[EngineStats::kDecodeStep] += 0.2;  // 5 ms each
  cur.preemptions = prev.preemptions + 2;
  auto line = format_stats_line(prev, cur, 2.0);
  ASSERT_TRUE(line.has_value());
  EXPECT_EQ(*line,
            "engine: running 3, waiting 1, prompt 1000.0 tok/s, generation 150.0 tok/s, KV used sliding 25.0% full "
            "25.0%, prefix hits 25.0%, decode step 5.00 ms, 2 preempted");
}

TEST(StatsLine, SilentWhenIdleButNotWhileRequestsWait) {
  EngineStats idle;
  idle.pages_total[0] = idle.pages_total[1] = 10;
  EXPECT_FALSE(format_stats_line(idle, idle, 10.0).has_value());
  EngineStats waiting = idle;
  waiting.waiting = 2;  // queued but not admitted (e.g. the pools are full): worth a line
  auto line = format_stats_line(idle, waiting, 10.0);
  ASSERT_TRUE(line.has_value());
  EXPECT_NE(line->find("waiting 2"), std::string::npos) << *line;
  EXPECT_EQ(line->find("step"), std::string::npos) << *line;  // no step ran in the interval
}

TEST(StatsLogger, StopsPromptlyAndReadsPeriodically) {
  std::atomic<int> reads{0};
  {
    StatsLogger logger([&] { ++reads; return EngineStats{}; }, std::chrono::milliseconds(5));
    while (reads.load() < 3) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const int after = reads.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(reads.load(), after);  // joined: no reads after destruction
  StatsLogger off([&] { ++reads; return EngineStats{}; }, std::chrono::seconds(0));
  EXPECT_EQ(reads.load(), after);  // interval 0: never started
}

}  // namespace
}  // namespace gs::server
