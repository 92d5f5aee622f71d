// Service-level objectives for goodput (vLLM's --goodput): a request is "good" when it meets
// every objective given. Values are milliseconds.
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace gs::bench {

struct GoodputSlo {
  std::optional<double> ttft_ms;
  std::optional<double> tpot_ms;
  std::optional<double> e2el_ms;
  bool any() const { return ttft_ms || tpot_ms || e2el_ms; }
};

// Parses items like "ttft:500" "tpot:50" "e2el:3000" (one per item; an item may also hold
// several separated by spaces). Unknown names, missing or negative values are gs::Errors.
GoodputSlo parse_goodput(const std::vector<std::string>& items);

}  // namespace gs::bench
