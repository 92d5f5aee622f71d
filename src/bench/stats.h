// Summary statistics of a sample, computed the way numpy does (vLLM's and SGLang's benchmark
// scripts report np.mean / np.median / np.std / np.percentile), so that our numbers and theirs
// agree to the last digit on the same timings.
#pragma once
#include <cstddef>
#include <vector>

namespace gs::bench {

// numpy's default ("linear") percentile: the sorted sample is indexed at p/100 * (n-1) and
// neighbouring values are interpolated linearly. p in [0, 100]. An empty sample gives 0, as
// vLLM's `np.percentile(ttfts or 0, p)` does.
double percentile(std::vector<double> values, double p);

struct Distribution {
  double mean = 0;
  double median = 0;
  double std = 0;  // population standard deviation (numpy's ddof=0)
  double p90 = 0;
  double p99 = 0;
  double min = 0;
  double max = 0;
  size_t count = 0;
};

// All fields 0 for an empty sample (vLLM's `or 0` convention).
Distribution summarize(const std::vector<double>& values);

}  // namespace gs::bench
