#include "server/histogram.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace gs::server {

std::string prom_number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::floor(v) && std::fabs(v) < 1e15) return fmt::format("{}", static_cast<long long>(v));
  return fmt::format("{:.9g}", v);
}

Histogram::Histogram(std::vector<double> upper_bounds) : bounds_(std::move(upper_bounds)), counts_(bounds_.size() + 1, 0) {
  std::sort(bounds_.begin(), bounds_.end());
}

void Histogram::observe(double value, int times) {
  if (times <= 0 || std::isnan(value)) return;
  size_t b = std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();  // value <= bound
  std::lock_guard<std::mutex> lock(mu_);
  counts_[b] += static_cast<uint64_t>(times);
  sum_ += value * times;
  count_ += static_cast<uint64_t>(times);
}

uint64_t Histogram::count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return count_;
}

void Histogram::render(std::string& out, const std::string& name, const std::string& help) const {
  std::lock_guard<std::mutex> lock(mu_);
  out += fmt::format("# HELP {} {}\n# TYPE {} histogram\n", name, help, name);
  uint64_t cum = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cum += counts_[i];
    out += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, prom_number(bounds_[i]), cum);
  }
  cum += counts_.back();
  out += fmt::format("{}_bucket{{le=\"+Inf\"}} {}\n", name, cum);
  out += fmt::format("{}_sum {}\n{}_count {}\n", name, prom_number(sum_), name, count_);
}

}  // namespace gs::server
