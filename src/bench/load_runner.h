// Runs a benchmark: requests go out at their arrival times (arrivals.h), at most
// max_concurrency at once (a request that arrives while all slots are busy waits for one, as
// behind vLLM's semaphore), each on a worker thread with its own keep-alive connection.
#pragma once
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "bench/dataset.h"
#include "bench/request_result.h"
#include "bench/stream_request.h"

namespace gs::bench {

struct LoadOptions {
  std::string base_url;
  std::string api_key;
  int max_concurrency = 0;  // 0: no limit
  double request_rate = std::numeric_limits<double>::infinity();
  double burstiness = 1.0;
  uint64_t seed = 0;
  int warmup_requests = 0;  // for warm_up()
  bool progress = true;
  double timeout_s = 600;   // connect / per-read timeout of each request
};

struct RunOutput {
  std::vector<RequestResult> results;  // in dataset order
  double duration_s = 0;               // first send to last completion
};

// Sends o.warmup_requests requests (cycling through `dataset`) at full concurrency and throws
// their results away; warns when some fail.
void warm_up(const LoadOptions& o, const RequestSettings& s, const std::vector<BenchRequest>& dataset);

// Sends every request of `dataset`. Output token counts missing from the server's usage are
// counted with `tok` (the generated text, no special tokens), or as the number of text chunks
// when there is no tokenizer (then a warning says so).
RunOutput run_load(const LoadOptions& o, const RequestSettings& s, const std::vector<BenchRequest>& dataset,
                   const BenchTokenizer* tok);

}  // namespace gs::bench
