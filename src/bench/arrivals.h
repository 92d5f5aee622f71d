// When each request of a run is sent. As in vLLM's get_request: an infinite rate sends everything
// at once; otherwise the gaps between requests are gamma-distributed with shape = burstiness and
// mean 1/rate (burstiness 1: exponential gaps, a Poisson process; < 1 burstier, > 1 steadier).
// The first request goes at 0.
#pragma once
#include <cstdint>
#include <vector>

namespace gs::bench {

// Offsets in seconds from the start of the run, one per request, non-decreasing.
std::vector<double> arrival_times(int num_requests, double request_rate, double burstiness, uint64_t seed);

}  // namespace gs::bench
