#include "bench/goodput.h"

#include <sstream>

#include "core/error.h"

namespace gs::bench {

GoodputSlo parse_goodput(const std::vector<std::string>& items) {
  GoodputSlo slo;
  for (const auto& item : items) {
    std::istringstream words(item);
    std::string w;
    while (words >> w) {
      const auto colon = w.find(':');
      GS_CHECK(colon != std::string::npos, "--goodput: '{}' is not NAME:MILLISECONDS (ttft, tpot or e2el)", w);
      const std::string name = w.substr(0, colon);
      const std::string value = w.substr(colon + 1);
      double ms = 0;
      try {
        size_t used = 0;
        ms = std::stod(value, &used);
        GS_CHECK(used == value.size(), "--goodput: '{}' has a value that is not a number", w);
      } catch (const std::logic_error&) {
        throw Error("--goodput: '{}' has a value that is not a number", w);
      }
      GS_CHECK(ms >= 0, "--goodput: '{}' is negative", w);
      if (name == "ttft") slo.ttft_ms = ms;
      else if (name == "tpot") slo.tpot_ms = ms;
      else if (name == "e2el") slo.e2el_ms = ms;
      else throw Error("--goodput: unknown objective '{}' (expected ttft, tpot or e2el)", name);
    }
  }
  return slo;
}

}  // namespace gs::bench
