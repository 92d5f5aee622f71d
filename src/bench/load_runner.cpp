#include "bench/load_runner.h"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "bench/arrivals.h"
#include "bench/progress_bar.h"
#include "core/log.h"

namespace gs::bench {
namespace {

// Indices of requests that have arrived and wait for a free worker.
class ArrivalQueue {
 public:
  void push(size_t i) {
    {
      std::lock_guard lock(mu_);
      q_.push_back(i);
    }
    cv_.notify_one();
  }
  void close() {
    {
      std::lock_guard lock(mu_);
      closed_ = true;
    }
    cv_.notify_all();
  }
  // False when closed and empty.
  bool pop(size_t& i) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [this] { return closed_ || !q_.empty(); });
    if (q_.empty()) return false;
    i = q_.front();
    q_.pop_front();
    return true;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<size_t> q_;
  bool closed_ = false;
};

// Sends requests[i] for every i at arrival offset times[i]; returns results in order.
std::vector<RequestResult> send_all(const LoadOptions& o, const RequestSettings& s,
                                    const std::vector<BenchRequest>& requests, const std::vector<double>& times,
                                    Clock::time_point run_start, ProgressBar* bar) {
  std::vector<RequestResult> results(requests.size());
  size_t workers = requests.size();
  if (o.max_concurrency > 0) workers = std::min(workers, static_cast<size_t>(o.max_concurrency));
  ArrivalQueue queue;
  std::vector<std::thread> pool;
  pool.reserve(workers);
  for (size_t w = 0; w < workers; ++w) {
    pool.emplace_back([&] {
      HttpClient client(o.base_url, o.api_key, o.timeout_s);
      size_t i = 0;
      while (queue.pop(i)) {
        results[i] = run_stream_request(client, s, requests[i], run_start);
        if (bar) bar->advance();
      }
    });
  }
  for (size_t i = 0; i < requests.size(); ++i) {
    std::this_thread::sleep_until(run_start + std::chrono::duration_cast<Clock::duration>(
                                                  std::chrono::duration<double>(times[i])));
    queue.push(i);
  }
  queue.close();
  for (auto& t : pool) t.join();
  return results;
}

}  // namespace

void warm_up(const LoadOptions& o, const RequestSettings& s, const std::vector<BenchRequest>& dataset) {
  if (o.warmup_requests > 0 && !dataset.empty()) {
    std::vector<BenchRequest> warm;
    for (int i = 0; i < o.warmup_requests; ++i) warm.push_back(dataset[static_cast<size_t>(i) % dataset.size()]);
    ProgressBar bar("warmup  ", o.warmup_requests, o.progress);
    const auto results = send_all(o, s, warm, std::vector<double>(warm.size(), 0.0), Clock::now(), &bar);
    bar.finish();
    int failed = 0;
    std::string first_error;
    for (const auto& r : results) {
      if (r.success) continue;
      if (failed++ == 0) first_error = r.error;
    }
    if (failed > 0) log::warn("{} of {} warmup requests failed; first error: {}", failed, results.size(), first_error);
  }
}

RunOutput run_load(const LoadOptions& o, const RequestSettings& s, const std::vector<BenchRequest>& dataset,
                   const BenchTokenizer* tok) {
  const std::vector<double> times =
      arrival_times(static_cast<int>(dataset.size()), o.request_rate, o.burstiness, o.seed);
  RunOutput out;
  ProgressBar bar("requests", static_cast<int>(dataset.size()), o.progress);
  const auto run_start = Clock::now();
  out.results = send_all(o, s, dataset, times, run_start, &bar);
  out.duration_s = std::chrono::duration<double>(Clock::now() - run_start).count();
  bar.finish();

  int counted_by_chunks = 0;
  for (auto& r : out.results) {
    if (!r.success || r.output_tokens_from_usage) continue;
    if (tok) {
      r.output_tokens = static_cast<int>(tok->encode(r.generated_text).size());
    } else {
      r.output_tokens = 1 + static_cast<int>(r.itl.size());
      ++counted_by_chunks;
    }
  }
  if (counted_by_chunks > 0) {
    log::warn("{} responses had no usage and no --tokenizer was given: their output tokens are counted as chunks",
              counted_by_chunks);
  }
  return out;
}

}  // namespace gs::bench
