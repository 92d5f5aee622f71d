#include <cmath>

#include "bench/dataset.h"
#include "core/error.h"

namespace gs::bench {

RangeMode parse_range_mode(const std::string& s) {
  if (s == "vllm") return RangeMode::Vllm;
  if (s == "sglang") return RangeMode::Sglang;
  throw Error("--random-range-mode: '{}' is not vllm or sglang", s);
}

const char* range_mode_name(RangeMode m) { return m == RangeMode::Vllm ? "vllm" : "sglang"; }

LengthBounds length_bounds(int length, double ratio, RangeMode mode) {
  GS_CHECK(length >= 1, "random length {} must be at least 1", length);
  LengthBounds b;
  if (mode == RangeMode::Vllm) {
    GS_CHECK(ratio >= 0 && ratio < 1, "--random-range-ratio {} must be in [0, 1) with --random-range-mode vllm",
             ratio);
    // Python's int() of a non-negative float truncates, as static_cast does.
    b.lo = static_cast<int>(length * (1 - ratio));
    b.hi = static_cast<int>(length * (1 + ratio));
  } else {
    GS_CHECK(ratio >= 0 && ratio <= 1, "--random-range-ratio {} must be in [0, 1] with --random-range-mode sglang",
             ratio);
    b.lo = static_cast<int>(length * ratio);
    b.hi = length;
  }
  if (b.lo < 1) b.lo = 1;
  if (b.hi < b.lo) b.hi = b.lo;
  return b;
}

}  // namespace gs::bench
