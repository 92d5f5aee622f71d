// A Prometheus histogram (cumulative buckets, sum, count), safe to observe from many threads.
#pragma once
#include <mutex>
#include <string>
#include <vector>

namespace gs::server {

class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);  // ascending; +Inf is implicit
  void observe(double value, int times = 1);
  // Appends "# HELP", "# TYPE" and the _bucket/_sum/_count lines.
  void render(std::string& out, const std::string& name, const std::string& help) const;
  uint64_t count() const;

 private:
  std::vector<double> bounds_;
  mutable std::mutex mu_;
  std::vector<uint64_t> counts_;  // per bucket, not cumulative; last is +Inf
  double sum_ = 0;
  uint64_t count_ = 0;
};

// Prometheus text value: integers without a fraction, others with enough digits.
std::string prom_number(double v);

}  // namespace gs::server
