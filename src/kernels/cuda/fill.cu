// Filling tensors on the device: constants, the project's counter-based uniform values (dummy
// weights identical to the cpu backend's, see ops/sampling_rng.h), and dtype conversion of
// uploaded weights.
#include <cuda_fp16.h>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_math.cuh"
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/launch_util.h"
#include "ops/sampling_rng.h"

namespace gs::cuda {
namespace {

constexpr int kThreads = 256;

template <typename U>
__global__ void fill_kernel(U* p, int64_t n, U value) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    p[i] = value;
}

template <typename T>
__global__ void fill_uniform_kernel(T* p, int64_t n, uint64_t seed, float scale) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    p[i] = from_f32<T>(rng::fill_value(seed, uint64_t(i), scale));
}

template <typename S>
__device__ __forceinline__ float load_any(const S* p, int64_t i);
template <>
__device__ __forceinline__ float load_any<float>(const float* p, int64_t i) { return p[i]; }
template <>
__device__ __forceinline__ float load_any<__half>(const __half* p, int64_t i) { return __half2float(p[i]); }
template <>
__device__ __forceinline__ float load_any<bf16>(const bf16* p, int64_t i) { return __bfloat162float(p[i]); }

template <typename S>
__global__ void to_bf16_kernel(const S* __restrict__ src, bf16* __restrict__ dst, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    dst[i] = __float2bfloat16_rn(load_any(src, i));
}

}  // namespace

void launch_fill(const Tensor& t, float value, cudaStream_t stream) {
  check_cuda_tensor(t, "fill", "t");
  int64_t n = t.numel();
  if (n == 0) return;
  int grid = grid_for(n, kThreads);
  switch (t.dtype) {
    case DType::F32: fill_kernel<float><<<grid, kThreads, 0, stream>>>(t.ptr<float>(), n, value); break;
    case DType::BF16: fill_kernel<bf16><<<grid, kThreads, 0, stream>>>(t.ptr<bf16>(), n, __float2bfloat16_rn(value)); break;
    case DType::F16: fill_kernel<__half><<<grid, kThreads, 0, stream>>>(t.ptr<__half>(), n, __float2half_rn(value)); break;
    case DType::I32: fill_kernel<int><<<grid, kThreads, 0, stream>>>(t.ptr<int>(), n, int(value)); break;
    case DType::I64: fill_kernel<int64_t><<<grid, kThreads, 0, stream>>>(t.ptr<int64_t>(), n, int64_t(value)); break;
    case DType::U8: fill_kernel<uint8_t><<<grid, kThreads, 0, stream>>>(t.ptr<uint8_t>(), n, uint8_t(value)); break;
  }
  GS_CUDA_LAUNCHED("fill");
}

void launch_fill_uniform(const Tensor& t, uint64_t seed, float scale, cudaStream_t stream) {
  check_cuda_tensor(t, "fill_uniform", "t");
  int64_t n = t.numel();
  if (n == 0) return;
  dispatch_float(t.dtype, "fill_uniform", "t", [&](auto tag) {
    using T = typename decltype(tag)::type;
    fill_uniform_kernel<T><<<grid_for(n, kThreads), kThreads, 0, stream>>>(t.ptr<T>(), n, seed, scale);
  });
  GS_CUDA_LAUNCHED("fill_uniform");
}

void launch_convert_to_bf16(const void* src, DType src_dtype, void* dst, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  int grid = grid_for(n, kThreads);
  switch (src_dtype) {
    case DType::F32: to_bf16_kernel<float><<<grid, kThreads, 0, stream>>>((const float*)src, (bf16*)dst, n); break;
    case DType::F16: to_bf16_kernel<__half><<<grid, kThreads, 0, stream>>>((const __half*)src, (bf16*)dst, n); break;
    case DType::BF16: to_bf16_kernel<bf16><<<grid, kThreads, 0, stream>>>((const bf16*)src, (bf16*)dst, n); break;
    default: fail(str_cat("convert_to_bf16: source dtype ", dtype_name(src_dtype), " is not a float type"));
  }
  GS_CUDA_LAUNCHED("convert_to_bf16");
}

}  // namespace gs::cuda
