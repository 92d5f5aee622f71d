#include "bench/arrivals.h"

#include <cmath>
#include <random>

#include "core/error.h"

namespace gs::bench {

std::vector<double> arrival_times(int num_requests, double request_rate, double burstiness, uint64_t seed) {
  GS_CHECK(request_rate > 0, "--request-rate {} must be positive (inf: all at once)", request_rate);
  GS_CHECK(burstiness > 0, "--burstiness {} must be positive", burstiness);
  std::vector<double> t(static_cast<size_t>(std::max(num_requests, 0)), 0.0);
  if (std::isinf(request_rate)) return t;
  std::mt19937_64 rng(seed);
  // gamma(shape k, scale theta) has mean k*theta; theta = 1/(rate*k) makes the mean gap 1/rate.
  std::gamma_distribution<double> gap(burstiness, 1.0 / (request_rate * burstiness));
  for (size_t i = 1; i < t.size(); ++i) t[i] = t[i - 1] + gap(rng);
  return t;
}

}  // namespace gs::bench
