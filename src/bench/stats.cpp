#include "bench/stats.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace gs::bench {

double percentile(std::vector<double> values, double p) {
  GS_CHECK(p >= 0 && p <= 100, "percentile {} is outside [0, 100]", p);
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double rank = p / 100.0 * static_cast<double>(values.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, values.size() - 1);
  const double frac = rank - static_cast<double>(lo);
  return values[lo] + (values[hi] - values[lo]) * frac;
}

Distribution summarize(const std::vector<double>& values) {
  Distribution d;
  d.count = values.size();
  if (values.empty()) return d;
  double sum = 0;
  for (double v : values) sum += v;
  d.mean = sum / static_cast<double>(values.size());
  double sq = 0;
  for (double v : values) sq += (v - d.mean) * (v - d.mean);
  d.std = std::sqrt(sq / static_cast<double>(values.size()));
  std::vector<double> sorted = values;
  std::sort(sorted.begin(), sorted.end());
  d.median = percentile(sorted, 50);
  d.p90 = percentile(sorted, 90);
  d.p99 = percentile(sorted, 99);
  d.min = sorted.front();
  d.max = sorted.back();
  return d;
}

}  // namespace gs::bench
