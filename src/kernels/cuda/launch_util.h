// Host-side helpers for launchers: dtype dispatch and argument checks with messages that name
// the op and the offending tensor. (No fmt here: this header is included by .cu files.)
#pragma once
#include <cuda_bf16.h>

#include <algorithm>
#include <cstdint>
#include <sstream>
#include <string>

#include "core/tensor.h"
#include "kernels/cuda/cuda_check.h"

namespace gs::cuda {

template <typename... Parts>
std::string str_cat(const Parts&... parts) {
  std::ostringstream os;
  (os << ... << parts);
  return os.str();
}

// Throws gs::Error with the concatenated message unless `cond`.
template <typename... Parts>
void require(bool cond, const Parts&... parts) {
  if (!cond) fail(str_cat(parts...));
}

template <typename T>
struct TypeTag {
  using type = T;
};

// Calls f(TypeTag<T>{}) with T = float for F32 and __nv_bfloat16 for BF16.
template <typename F>
void dispatch_float(DType dt, const char* op, const char* what, F&& f) {
  if (dt == DType::BF16) f(TypeTag<__nv_bfloat16>{});
  else if (dt == DType::F32) f(TypeTag<float>{});
  else fail(str_cat(op, ": ", what, " has dtype ", dtype_name(dt), "; expected bf16 or f32"));
}

inline void check_cuda_tensor(const Tensor& t, const char* op, const char* what) {
  require(t.defined(), op, ": ", what, " is undefined");
  require(t.device == Device::CUDA, op, ": ", what, " (", t.str(), ") must live on the GPU");
}

inline void check_dtype(const Tensor& t, DType dt, const char* op, const char* what) {
  require(t.dtype == dt, op, ": ", what, " is ", t.str(), "; expected ", dtype_name(dt));
}

// Opts a kernel into more than the default 48 KB of dynamic shared memory when it needs it.
template <typename K>
void allow_smem(K kernel, size_t bytes) {
  if (bytes > 48 * 1024)
    GS_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
}

// Blocks for a grid-stride loop over n work items with `threads` per block: enough to fill the
// GPU several times over, never more than the work needs.
inline int grid_for(int64_t n, int threads) {
  int64_t blocks = (n + threads - 1) / threads;
  return int(std::clamp<int64_t>(blocks, 1, 132 * 16));
}

}  // namespace gs::cuda
