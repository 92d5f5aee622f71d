// RMSNorm and the fused post-norm + residual add + layer scalar. One block per row; the row stays
// in registers between the sum of squares and the normalisation, so x is read once.
#include "kernels/cuda/device_math.cuh"
#include "kernels/cuda/launch_util.h"
#include "kernels/cuda/norms.h"

namespace gs::cuda {
namespace {

constexpr int kMaxUnits = 4;  // vector units per thread held in registers

// V elements at p: one 16-byte access when V fills a vector, else scalar accesses.
template <typename T, int V>
__device__ __forceinline__ void load_n(const T* p, float (&v)[V]) {
  if constexpr (V == kVec<T>) {
    load_vec(p, v);
  } else {
#pragma unroll
    for (int e = 0; e < V; ++e) v[e] = to_f32(p[e]);
  }
}
template <typename T, int V>
__device__ __forceinline__ void store_n(T* p, const float (&v)[V]) {
  if constexpr (V == kVec<T>) {
    store_vec(p, v);
  } else {
#pragma unroll
    for (int e = 0; e < V; ++e) p[e] = from_f32<T>(v[e]);
  }
}

// RESID: out is the residual stream, updated as (out + norm(x)·w)·out_scale. Otherwise out = norm(x)·w.
template <typename T, int V, bool RESID>
__global__ void rms_row_kernel(const T* x, const void* w, bool w_f32, T* out, int64_t cols, float eps,
                               float out_scale) {
  __shared__ float scratch[32];
  const int64_t row = blockIdx.x;
  const T* xr = x + row * cols;
  T* outr = out + row * cols;
  const int64_t units = cols / V;
  float v[kMaxUnits][V];
  float sumsq = 0.f;
#pragma unroll
  for (int k = 0; k < kMaxUnits; ++k) {
    int64_t j = threadIdx.x + int64_t(k) * blockDim.x;
    if (j < units) {
      load_n<T, V>(xr + j * V, v[k]);
#pragma unroll
      for (int e = 0; e < V; ++e) sumsq += v[k][e] * v[k][e];
    }
  }
  float inv = rsqrtf(block_sum(sumsq, scratch) / float(cols) + eps);
#pragma unroll
  for (int k = 0; k < kMaxUnits; ++k) {
    int64_t j = threadIdx.x + int64_t(k) * blockDim.x;
    if (j >= units) continue;
    float y[V];
#pragma unroll
    for (int e = 0; e < V; ++e) {
      float n = v[k][e] * inv;
      if (w) n *= load_weight(w, w_f32, j * V + e);
      y[e] = rnd<T>(n);
    }
    if constexpr (RESID) {
      float r[V];
      load_n<T, V>(outr + j * V, r);
#pragma unroll
      for (int e = 0; e < V; ++e) {
        float s = rnd<T>(r[e] + y[e]);
        y[e] = out_scale != 1.f ? s * out_scale : s;
      }
    }
    store_n<T, V>(outr + j * V, y);
  }
}

template <typename T, bool RESID>
void launch_rows(const char* op, const Tensor& x, const Tensor* w, float eps, T* out, float out_scale,
                 cudaStream_t stream) {
  const int64_t rows = x.rows(), cols = x.cols();
  if (rows == 0 || cols == 0) return;
  constexpr int VV = kVec<T>;
  bool vec = cols % VV == 0 && aligned16(x.data) && aligned16(out);
  int64_t units = vec ? cols / VV : cols;
  int threads = int(std::min<int64_t>(1024, (units + kMaxUnits - 1) / kMaxUnits));
  threads = std::max(32, (threads + 31) / 32 * 32);
  require(units <= int64_t(threads) * kMaxUnits, op, ": rows of ", cols, " elements are too long for one block");
  const void* wp = w ? w->data : nullptr;
  bool w_f32 = w && w->dtype == DType::F32;
  if (vec)
    rms_row_kernel<T, VV, RESID><<<unsigned(rows), threads, 0, stream>>>(x.ptr<T>(), wp, w_f32, out, cols, eps, out_scale);
  else
    rms_row_kernel<T, 1, RESID><<<unsigned(rows), threads, 0, stream>>>(x.ptr<T>(), wp, w_f32, out, cols, eps, out_scale);
  GS_CUDA_LAUNCHED(op);
}

void check_weight(const Tensor& w, int64_t cols, const char* op) {
  check_cuda_tensor(w, op, "weight");
  require(w.numel() == cols && (w.dtype == DType::BF16 || w.dtype == DType::F32), op, ": weight ", w.str(),
          " must be bf16 or f32 with ", cols, " elements");
}

}  // namespace

void launch_rms_norm(const Tensor& x, const Tensor* weight, float eps, const Tensor& out, cudaStream_t stream) {
  check_cuda_tensor(x, "rms_norm", "x");
  check_cuda_tensor(out, "rms_norm", "out");
  require(x.dtype == out.dtype && x.numel() == out.numel() && x.cols() == out.cols(), "rms_norm: out ", out.str(),
          " must match x ", x.str());
  if (weight) check_weight(*weight, x.cols(), "rms_norm");
  dispatch_float(x.dtype, "rms_norm", "x", [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch_rows<T, false>("rms_norm", x, weight, eps, out.ptr<T>(), 1.f, stream);
  });
}

void launch_residual_add_norm(const Tensor& residual, const Tensor& x, const Tensor& weight, float eps,
                              float out_scale, cudaStream_t stream) {
  check_cuda_tensor(residual, "residual_add_norm", "residual");
  check_cuda_tensor(x, "residual_add_norm", "x");
  require(x.dtype == residual.dtype && x.shape == residual.shape, "residual_add_norm: x ", x.str(),
          " must match residual ", residual.str());
  check_weight(weight, x.cols(), "residual_add_norm");
  dispatch_float(x.dtype, "residual_add_norm", "x", [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch_rows<T, true>("residual_add_norm", x, &weight, eps, residual.ptr<T>(), out_scale, stream);
  });
}

}  // namespace gs::cuda
