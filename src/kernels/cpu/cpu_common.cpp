// Argument checks and per-thread scratch shared by the CPU ops.
#include <memory>

#include "kernels/cpu/cpu_ops.h"

namespace gs::cpu {

void check_f32(const char* op, const Tensor& t, const char* what) {
  GS_CHECK(t.defined(), "cpu {}: {} is undefined", op, what);
  GS_CHECK(t.dtype == DType::F32, "cpu {}: {} must be f32, got {}", op, what, t.str());
}

void check_float(const char* op, const Tensor& t, const char* what) {
  GS_CHECK(t.defined(), "cpu {}: {} is undefined", op, what);
  GS_CHECK(t.dtype == DType::F32 || t.dtype == DType::BF16 || t.dtype == DType::F16,
           "cpu {}: {} must be a float tensor, got {}", op, what, t.str());
}

void check_i32(const char* op, const Tensor& t, const char* what) {
  GS_CHECK(t.defined(), "cpu {}: {} is undefined", op, what);
  GS_CHECK(t.dtype == DType::I32, "cpu {}: {} must be i32, got {}", op, what, t.str());
}

float* thread_scratch(size_t n, int slot) {
  // A few independent slots so one op can hold two scratch rows at once.
  thread_local std::vector<float> buffers[4];
  auto& b = buffers[slot];
  if (b.size() < n) b.resize(n);
  return b.data();
}

}  // namespace gs::cpu
