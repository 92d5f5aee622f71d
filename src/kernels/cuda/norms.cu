// RMSNorm and the fused post-norm + residual add + layer scalar (+ the next block's input norm).
#include "kernels/cuda/device_math.cuh"
#include "kernels/cuda/launch_util.h"
#include "kernels/cuda/norms.h"

namespace gs::cuda {
namespace {

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

// The V weights of vector unit j (w null: no weight, all ones).
template <int V>
__device__ __forceinline__ void load_unit_weights(const void* w, bool w_f32, int64_t j, float (&wv)[V]) {
#pragma unroll
  for (int e = 0; e < V; ++e) wv[e] = w ? load_weight(w, w_f32, j * V + e) : 1.f;
}

// What a row kernel writes.
enum class RowOp {
  Norm,       // out = norm(x)·w
  Resid,      // out is the residual stream: out = (out + norm(x)·w)·out_scale
  ResidNext,  // Resid, then next_out = norm(out)·next_w from the stored residual row
};

// One block per row, each thread U vector units of it, held in registers between the sum of squares
// and the normalisation (x is read once). The kernel is latency-bound (a decode step runs a few
// rows of 1.5-5k elements), so what matters is the number of dependent memory round trips: with
// U = 1 (rows up to 1024 vectors: every Gemma hidden size) the weights of both norms are loaded
// before pdl_wait() (they do not depend on the previous kernel) and the row and the residual in one
// round trip after it; with U > 1 (long rows) the weights are read where they are used.
template <typename T, int V, int U, RowOp OP>
__global__ void __launch_bounds__(1024) rms_row_kernel(const T* x, const void* w, bool w_f32, T* out, int64_t cols,
                                                       float eps, float out_scale, const void* next_w,
                                                       bool next_w_f32, T* next_out) {
  constexpr bool kEarly = U == 1;
  __shared__ float scratch[32];
  const int64_t row = blockIdx.x;
  const T* xr = x + row * cols;
  T* outr = out + row * cols;
  const int64_t units = cols / V;
  auto unit = [&](int k) { return int64_t(threadIdx.x) + int64_t(k) * blockDim.x; };

  float wv[V], nwv[V];
  if constexpr (kEarly) {
    if (unit(0) < units) {
      load_unit_weights<V>(w, w_f32, unit(0), wv);
      if constexpr (OP == RowOp::ResidNext) load_unit_weights<V>(next_w, next_w_f32, unit(0), nwv);
    }
  }
  pdl_enter();

  float v[U][V], r[U][V];
  float sumsq = 0.f;
#pragma unroll
  for (int k = 0; k < U; ++k) {
    if (unit(k) >= units) continue;
    load_n<T, V>(xr + unit(k) * V, v[k]);
    if constexpr (OP != RowOp::Norm) load_n<T, V>(outr + unit(k) * V, r[k]);
#pragma unroll
    for (int e = 0; e < V; ++e) sumsq += v[k][e] * v[k][e];
  }
  const float inv = rsqrtf(block_sum(sumsq, scratch) / float(cols) + eps);
  float next_sumsq = 0.f;
#pragma unroll
  for (int k = 0; k < U; ++k) {
    const int64_t j = unit(k);
    if (j >= units) continue;
    if constexpr (!kEarly) load_unit_weights<V>(w, w_f32, j, wv);
    float y[V];
#pragma unroll
    for (int e = 0; e < V; ++e) {
      y[e] = rnd<T>(v[k][e] * inv * wv[e]);
      if constexpr (OP != RowOp::Norm) {
        const float s = rnd<T>(r[k][e] + y[e]);
        y[e] = out_scale != 1.f ? s * out_scale : s;
      }
    }
    store_n<T, V>(outr + j * V, y);
    if constexpr (OP == RowOp::ResidNext) {
      // The next norm reads the row as stored, exactly what a separate rms_norm would load.
#pragma unroll
      for (int e = 0; e < V; ++e) {
        v[k][e] = rnd<T>(y[e]);
        next_sumsq += v[k][e] * v[k][e];
      }
    }
  }
  if constexpr (OP == RowOp::ResidNext) {
    const float next_inv = rsqrtf(block_sum(next_sumsq, scratch) / float(cols) + eps);
    T* nr = next_out + row * cols;
#pragma unroll
    for (int k = 0; k < U; ++k) {
      const int64_t j = unit(k);
      if (j >= units) continue;
      if constexpr (!kEarly) load_unit_weights<V>(next_w, next_w_f32, j, nwv);
      float y[V];
#pragma unroll
      for (int e = 0; e < V; ++e) y[e] = rnd<T>(v[k][e] * next_inv * nwv[e]);
      store_n<T, V>(nr + j * V, y);
    }
  }
}

constexpr int kMaxThreads = 1024;
constexpr int kLongRowUnits = 4;  // U for rows over kMaxThreads vectors

template <typename T, RowOp OP>
void launch_rows(const char* op, const Tensor& x, const Tensor* w, float eps, T* out, float out_scale,
                 cudaStream_t stream, const Tensor* next_w = nullptr, T* next_out = nullptr) {
  const int64_t rows = x.rows(), cols = x.cols();
  if (rows == 0 || cols == 0) return;
  constexpr int VV = kVec<T>;
  bool vec = cols % VV == 0 && aligned16(x.data) && aligned16(out) && (!next_out || aligned16(next_out));
  const int64_t units = vec ? cols / VV : cols;
  const bool one = units <= kMaxThreads;
  const int per_thread = one ? 1 : kLongRowUnits;
  int threads = int(std::min<int64_t>(kMaxThreads, (units + per_thread - 1) / per_thread));
  threads = std::max(32, (threads + 31) / 32 * 32);
  require(units <= int64_t(threads) * per_thread, op, ": rows of ", cols, " elements are too long for one block");
  const void* wp = w ? w->data : nullptr;
  bool w_f32 = w && w->dtype == DType::F32;
  const void* nwp = next_w ? next_w->data : nullptr;
  bool nw_f32 = next_w && next_w->dtype == DType::F32;
  auto kernel = vec ? (one ? rms_row_kernel<T, VV, 1, OP> : rms_row_kernel<T, VV, kLongRowUnits, OP>)
                    : (one ? rms_row_kernel<T, 1, 1, OP> : rms_row_kernel<T, 1, kLongRowUnits, OP>);
  launch_pdl("rms_row_kernel", kernel, unsigned(rows), threads, 0, stream, x.ptr<T>(), wp, w_f32, out, cols, eps,
             out_scale, nwp, nw_f32, next_out);
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
    launch_rows<T, RowOp::Norm>("rms_norm", x, weight, eps, out.ptr<T>(), 1.f, stream);
  });
}

void launch_residual_add_norm(const Tensor& residual, const Tensor& x, const Tensor& weight, float eps,
                              float out_scale, cudaStream_t stream, const Tensor* next_weight, const Tensor* next_out) {
  check_cuda_tensor(residual, "residual_add_norm", "residual");
  check_cuda_tensor(x, "residual_add_norm", "x");
  require(x.dtype == residual.dtype && x.shape == residual.shape, "residual_add_norm: x ", x.str(),
          " must match residual ", residual.str());
  check_weight(weight, x.cols(), "residual_add_norm");
  require((next_weight == nullptr) == (next_out == nullptr), "residual_add_norm: next_weight and next_out go together");
  if (next_out) {
    check_weight(*next_weight, x.cols(), "residual_add_norm (next norm)");
    check_cuda_tensor(*next_out, "residual_add_norm", "next_out");
    require(next_out->dtype == residual.dtype && next_out->numel() == residual.numel() &&
                next_out->cols() == residual.cols(),
            "residual_add_norm: next_out ", next_out->str(), " must match residual ", residual.str());
    require(next_out->data != x.data && next_out->data != residual.data,
            "residual_add_norm: next_out must be a buffer of its own");
  }
  dispatch_float(x.dtype, "residual_add_norm", "x", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (next_out)
      launch_rows<T, RowOp::ResidNext>("residual_add_norm", x, &weight, eps, residual.ptr<T>(), out_scale, stream,
                                       next_weight, next_out->ptr<T>());
    else
      launch_rows<T, RowOp::Resid>("residual_add_norm", x, &weight, eps, residual.ptr<T>(), out_scale, stream);
  });
}

}  // namespace gs::cuda
