// Device-side helpers shared by the kernels: element conversion with the reference's rounding,
// 16-byte vector access, warp and block reductions, tanh-GELU.
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace gs::cuda {

using bf16 = __nv_bfloat16;

// ---- scalar conversion --------------------------------------------------------------------------
__device__ __forceinline__ float to_f32(float x) { return x; }
__device__ __forceinline__ float to_f32(bf16 x) { return __bfloat162float(x); }

template <typename T>
__device__ __forceinline__ T from_f32(float x);
template <>
__device__ __forceinline__ float from_f32<float>(float x) { return x; }
template <>
__device__ __forceinline__ bf16 from_f32<bf16>(float x) { return __float2bfloat16_rn(x); }

// The value a T tensor would hold for x: the reference rounds every intermediate it stores in the
// activation dtype, so kernels round at the same points (identity for f32).
template <typename T>
__device__ __forceinline__ float rnd(float x) { return to_f32(from_f32<T>(x)); }

// Element i of a weight that is bf16 or (w_f32) f32; the branch is uniform across the grid.
__device__ __forceinline__ float load_weight(const void* w, bool w_f32, int64_t i) {
  return w_f32 ? static_cast<const float*>(w)[i] : __bfloat162float(static_cast<const bf16*>(w)[i]);
}

// ---- 16-byte vectors ----------------------------------------------------------------------------
// kVec<T> elements of T fill 16 bytes.
template <typename T>
constexpr int kVec = 16 / int(sizeof(T));

template <typename T>
struct alignas(16) Vec16 {
  T v[kVec<T>];
};

template <typename T>
__device__ __forceinline__ void load_vec(const T* p, float (&out)[kVec<T>]) {
  Vec16<T> v = *reinterpret_cast<const Vec16<T>*>(p);
#pragma unroll
  for (int i = 0; i < kVec<T>; ++i) out[i] = to_f32(v.v[i]);
}

template <typename T>
__device__ __forceinline__ void store_vec(T* p, const float (&in)[kVec<T>]) {
  Vec16<T> v;
#pragma unroll
  for (int i = 0; i < kVec<T>; ++i) v.v[i] = from_f32<T>(in[i]);
  *reinterpret_cast<Vec16<T>*>(p) = v;
}

// ---- reductions ---------------------------------------------------------------------------------
__device__ __forceinline__ float warp_sum(float x) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
  return x;
}

__device__ __forceinline__ float warp_max(float x) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
  return x;
}

// Sum over the block; every thread gets the result. `scratch` holds 32 floats. Call from all
// threads; blockDim.x a multiple of 32.
__device__ __forceinline__ float block_sum(float x, float* scratch) {
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  x = warp_sum(x);
  __syncthreads();  // scratch may still be read by a previous call
  if (lane == 0) scratch[warp] = x;
  __syncthreads();
  float t = lane < nwarps ? scratch[lane] : 0.f;
  return warp_sum(t);
}

__device__ __forceinline__ float block_max(float x, float* scratch) {
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  x = warp_max(x);
  __syncthreads();
  if (lane == 0) scratch[warp] = x;
  __syncthreads();
  float t = lane < nwarps ? scratch[lane] : -INFINITY;
  return warp_max(t);
}

// ---- activations --------------------------------------------------------------------------------
// gelu_pytorch_tanh: 0.5·x·(1 + tanh(sqrt(2/π)·(x + 0.044715·x³))), in f32.
__device__ __forceinline__ float gelu_tanh(float x) {
  const float k = 0.7978845608028654f;  // sqrt(2/pi)
  return 0.5f * x * (1.f + tanhf(k * (x + 0.044715f * x * x * x)));
}

// True when p is aligned for 16-byte vector access.
__host__ __device__ __forceinline__ bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

}  // namespace gs::cuda
