// Per-element kernels: add, scale, tanh-GELU products, soft-cap, row gather. Each thread handles
// one 16-byte vector where the tensor allows it (aligned, width a multiple of the vector), else
// one element; grid-stride loops so any size works.
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_math.cuh"
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/launch_util.h"

namespace gs::cuda {
namespace {

constexpr int kThreads = 256;

// out[i] = f(a[i], b[i]) (b may be null). No __restrict__: in-place ops pass out == a.
template <typename T, int V, typename F>
__global__ void map2_kernel(const T* a, const T* b, T* out, int64_t n_items, F f) {
  pdl_enter();
  for (int64_t it = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; it < n_items; it += int64_t(gridDim.x) * blockDim.x) {
    int64_t i = it * V;
    if constexpr (V == 1) {
      out[i] = from_f32<T>(f(to_f32(a[i]), b ? to_f32(b[i]) : 0.f));
    } else {
      float x[V], y[V];
      load_vec(a + i, x);
      if (b) load_vec(b + i, y);
#pragma unroll
      for (int k = 0; k < V; ++k) x[k] = f(x[k], b ? y[k] : 0.f);
      store_vec(out + i, x);
    }
  }
}

template <typename T, typename F>
void map2(const char* name, const T* a, const T* b, T* out, int64_t n, F f, cudaStream_t stream) {
  if (n == 0) return;
  constexpr int V = kVec<T>;
  bool vec = n % V == 0 && aligned16(a) && aligned16(out) && (!b || aligned16(b));
  if (vec) {
    launch_pdl("map2_kernel", map2_kernel<T, V, F>, grid_for(n / V, kThreads), kThreads, 0, stream, a, b, out, n / V,
               f);
  } else {
    launch_pdl("map2_kernel", map2_kernel<T, 1, F>, grid_for(n, kThreads), kThreads, 0, stream, a, b, out, n, f);
  }
  GS_CUDA_LAUNCHED(name);
}

struct AddOp {
  __device__ float operator()(float x, float y) const { return x + y; }
};
struct ScaleOp {
  float s;
  __device__ float operator()(float x, float) const { return x * s; }
};
// The reference rounds gelu(gate) to the activation dtype before the product.
template <typename T>
struct GeluMulOp {
  __device__ float operator()(float g, float u) const { return rnd<T>(gelu_tanh(g)) * u; }
};
// cap·tanh(x/cap), with the reference's roundings after the division and the tanh.
template <typename T>
struct SoftcapOp {
  float cap;
  __device__ float operator()(float x, float) const { return rnd<T>(tanhf(rnd<T>(x / cap))) * cap; }
};

// gate_up [rows, 2I] -> out [rows, I]; one item = V consecutive columns of one row.
template <typename T, int V>
__global__ void gelu_mul_rows_kernel(const T* __restrict__ gu, T* __restrict__ out, int64_t rows, int64_t inter) {
  pdl_enter();
  int64_t per_row = inter / V, n = rows * per_row;
  for (int64_t it = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; it < n; it += int64_t(gridDim.x) * blockDim.x) {
    int64_t r = it / per_row, c = (it % per_row) * V;
    const T* g = gu + r * 2 * inter + c;
    GeluMulOp<T> f;
    if constexpr (V == 1) {
      out[r * inter + c] = from_f32<T>(f(to_f32(g[0]), to_f32(g[inter])));
    } else {
      float x[V], y[V];
      load_vec(g, x);
      load_vec(g + inter, y);
#pragma unroll
      for (int k = 0; k < V; ++k) x[k] = f(x[k], y[k]);
      store_vec(out + r * inter + c, x);
    }
  }
}

// One item = 16 bytes (or one element) of one output row; rows out of range give zeros (ids are
// validated upstream; a kernel cannot raise an error without synchronising).
template <typename U>
__global__ void gather_rows_kernel(const U* __restrict__ x, int64_t n_src, const int* __restrict__ rows, U* out,
                                   int64_t n_rows, int64_t units_per_row) {
  pdl_enter();
  int64_t n = n_rows * units_per_row;
  for (int64_t it = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; it < n; it += int64_t(gridDim.x) * blockDim.x) {
    int64_t r = it / units_per_row, c = it % units_per_row;
    int src = rows[r];
    if (src >= 0 && src < n_src) out[it] = x[src * units_per_row + c];
    else out[it] = U{};
  }
}

}  // namespace

void launch_add(const Tensor& a, const Tensor& b, const Tensor& out, cudaStream_t stream) {
  for (auto* t : {&a, &b, &out}) check_cuda_tensor(*t, "add", "operand");
  require(a.shape == b.shape && a.numel() == out.numel() && a.dtype == b.dtype && a.dtype == out.dtype,
          "add: operands ", a.str(), " + ", b.str(), " -> ", out.str(), " must match");
  dispatch_float(a.dtype, "add", "a", [&](auto tag) {
    using T = typename decltype(tag)::type;
    map2("add", a.ptr<T>(), b.ptr<T>(), out.ptr<T>(), a.numel(), AddOp{}, stream);
  });
}

void launch_scale(const Tensor& x, float s, cudaStream_t stream) {
  check_cuda_tensor(x, "scale", "x");
  dispatch_float(x.dtype, "scale", "x", [&](auto tag) {
    using T = typename decltype(tag)::type;
    map2("scale", x.ptr<T>(), (const T*)nullptr, x.ptr<T>(), x.numel(), ScaleOp{s}, stream);
  });
}

void launch_gelu_tanh_mul(const Tensor& gate_up, const Tensor& out, cudaStream_t stream) {
  check_cuda_tensor(gate_up, "gelu_tanh_mul", "gate_up");
  check_cuda_tensor(out, "gelu_tanh_mul", "out");
  int64_t rows = gate_up.rows(), inter = out.cols();
  require(gate_up.cols() == 2 * inter && out.rows() == rows && gate_up.dtype == out.dtype, "gelu_tanh_mul: gate_up ",
          gate_up.str(), " must be [T, 2I] for out ", out.str(), " [T, I]");
  if (rows * inter == 0) return;
  dispatch_float(out.dtype, "gelu_tanh_mul", "out", [&](auto tag) {
    using T = typename decltype(tag)::type;
    constexpr int V = kVec<T>;
    if (inter % V == 0 && aligned16(gate_up.data) && aligned16(out.data)) {
      launch_pdl("gelu_mul_rows_kernel", gelu_mul_rows_kernel<T, V>, grid_for(rows * inter / V, kThreads), kThreads, 0,
                 stream, gate_up.ptr<T>(), out.ptr<T>(), rows, inter);
    } else {
      launch_pdl("gelu_mul_rows_kernel", gelu_mul_rows_kernel<T, 1>, grid_for(rows * inter, kThreads), kThreads, 0,
                 stream, gate_up.ptr<T>(), out.ptr<T>(), rows, inter);
    }
    GS_CUDA_LAUNCHED("gelu_tanh_mul");
  });
}

void launch_gelu_tanh_mul_pair(const Tensor& a, const Tensor& b, const Tensor& out, cudaStream_t stream) {
  for (auto* t : {&a, &b, &out}) check_cuda_tensor(*t, "gelu_tanh_mul_pair", "operand");
  require(a.numel() == b.numel() && a.numel() == out.numel() && a.dtype == b.dtype && a.dtype == out.dtype,
          "gelu_tanh_mul_pair: gelu(", a.str(), ") * ", b.str(), " -> ", out.str(), " must match");
  dispatch_float(a.dtype, "gelu_tanh_mul_pair", "a", [&](auto tag) {
    using T = typename decltype(tag)::type;
    map2("gelu_tanh_mul_pair", a.ptr<T>(), b.ptr<T>(), out.ptr<T>(), a.numel(), GeluMulOp<T>{}, stream);
  });
}

void launch_softcap(const Tensor& x, float cap, cudaStream_t stream) {
  check_cuda_tensor(x, "softcap", "x");
  require(cap > 0, "softcap: cap must be positive, got ", cap);
  dispatch_float(x.dtype, "softcap", "x", [&](auto tag) {
    using T = typename decltype(tag)::type;
    map2("softcap", x.ptr<T>(), (const T*)nullptr, x.ptr<T>(), x.numel(), SoftcapOp<T>{cap}, stream);
  });
}

void launch_gather_rows(const Tensor& x, const Tensor& rows, const Tensor& out, cudaStream_t stream) {
  check_cuda_tensor(x, "gather_rows", "x");
  check_cuda_tensor(rows, "gather_rows", "rows");
  check_cuda_tensor(out, "gather_rows", "out");
  check_dtype(rows, DType::I32, "gather_rows", "rows");
  require(x.dtype == out.dtype && x.cols() == out.cols() && out.rows() == rows.numel(), "gather_rows: out ",
          out.str(), " must be [rows ", rows.str(), ", cols of x ", x.str(), "]");
  int64_t row_bytes = x.cols() * int64_t(dtype_size(x.dtype)), n_rows = rows.numel();
  if (n_rows == 0 || row_bytes == 0) return;
  if (row_bytes % 16 == 0 && aligned16(x.data) && aligned16(out.data)) {
    int64_t units = row_bytes / 16;
    launch_pdl("gather_rows_kernel", gather_rows_kernel<uint4>, grid_for(n_rows * units, kThreads), kThreads, 0, stream,
               static_cast<const uint4*>(x.data), x.rows(), rows.ptr<int>(), static_cast<uint4*>(out.data), n_rows,
               units);
  } else if (row_bytes % 2 == 0) {
    int64_t units = row_bytes / 2;
    launch_pdl("gather_rows_kernel", gather_rows_kernel<uint16_t>, grid_for(n_rows * units, kThreads), kThreads, 0,
               stream, static_cast<const uint16_t*>(x.data), x.rows(), rows.ptr<int>(),
               static_cast<uint16_t*>(out.data), n_rows, units);
  } else {
    launch_pdl("gather_rows_kernel", gather_rows_kernel<uint8_t>, grid_for(n_rows * row_bytes, kThreads), kThreads, 0,
               stream, static_cast<const uint8_t*>(x.data), x.rows(), rows.ptr<int>(), static_cast<uint8_t*>(out.data),
               n_rows, row_bytes);
  }
  GS_CUDA_LAUNCHED("gather_rows");
}

}  // namespace gs::cuda
