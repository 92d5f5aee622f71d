#include "bench/spec_metrics.h"

#include <sstream>

namespace gs::bench {

std::map<std::string, double> parse_prometheus(const std::string& text) {
  std::map<std::string, double> out;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    // name{labels} value [timestamp]   or   name value [timestamp]
    size_t name_end = line.find_first_of("{ \t");
    if (name_end == std::string::npos || name_end == 0) continue;
    const std::string name = line.substr(0, name_end);
    size_t value_start = name_end;
    if (line[name_end] == '{') {
      const size_t close = line.find('}', name_end);
      if (close == std::string::npos) continue;
      value_start = close + 1;
    }
    std::istringstream rest(line.substr(value_start));
    std::string value;
    if (!(rest >> value)) continue;
    try {
      out[name] += std::stod(value);
    } catch (const std::logic_error&) {
      continue;  // NaN spellings stod refuses, or junk: not a metric we can use
    }
  }
  return out;
}

std::optional<double> spec_accept_length(const SpecSnapshot& before, const SpecSnapshot& after) {
  auto get = [](const SpecSnapshot& s, const std::string& n) -> std::optional<double> {
    auto it = s.values.find(n);
    if (it == s.values.end()) return std::nullopt;
    return it->second;
  };
  for (const std::string prefix : {"vllm:", "gemmaserve_"}) {
    const std::string acc = prefix + "spec_decode_num_accepted_tokens_total";
    const std::string drafts = prefix + "spec_decode_num_drafts_total";
    auto a1 = get(after, acc), d1 = get(after, drafts);
    if (!a1 || !d1) continue;
    const double a = *a1 - get(before, acc).value_or(0);
    const double d = *d1 - get(before, drafts).value_or(0);
    if (d <= 0) return std::nullopt;  // no drafts in this run: nothing to report
    return 1.0 + a / d;
  }
  if (auto g = get(after, "sglang:spec_accept_length")) return *g;
  return std::nullopt;
}

}  // namespace gs::bench
