// The last step of both MoE expert paths: each token gathers its k expert outputs and sums them
// weighted, in f32, in ascending expert order (as the reference adds experts one after the other),
// and rounds once. A gather, not a scatter: no atomics, so the sum does not depend on which
// expert's kernel finished first.
//
// It is latency-bound (at decode a token's k rows are a few KB): the first warp sorts the token's
// (expert, row, weight) triples once into shared memory, and each thread then issues the loads of
// up to 8 expert rows before it adds any of them. The first version re-sorted in every thread and
// walked the k rows one dependent load after another: 22 us per call at one token (ncu, H200),
// ~0.6 ms of a 26B-A4B batch-1 step.
#pragma once
#include <climits>

#include "kernels/cuda/device_math.cuh"

namespace gs::cuda {

constexpr int kMoeMaxTopK = 32;
constexpr int kMoeCombineThreads = 256;
constexpr int kMoeCombineVec = 4;  // elements per thread

__device__ __forceinline__ void load4(const float* p, float (&v)[4]) {
  const float4 f = *reinterpret_cast<const float4*>(p);
  v[0] = f.x, v[1] = f.y, v[2] = f.z, v[3] = f.w;
}
__device__ __forceinline__ void load4(const bf16* p, float (&v)[4]) {
  const uint2 raw = *reinterpret_cast<const uint2*>(p);
  const float2 lo = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&raw.x));
  const float2 hi = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&raw.y));
  v[0] = lo.x, v[1] = lo.y, v[2] = hi.x, v[3] = hi.y;
}
__device__ __forceinline__ void store4(float* p, const float (&v)[4]) {
  *reinterpret_cast<float4*>(p) = make_float4(v[0], v[1], v[2], v[3]);
}
__device__ __forceinline__ void store4(bf16* p, const float (&v)[4]) {
  const __nv_bfloat162 lo = __floats2bfloat162_rn(v[0], v[1]), hi = __floats2bfloat162_rn(v[2], v[3]);
  uint2 raw;
  raw.x = *reinterpret_cast<const uint32_t*>(&lo);
  raw.y = *reinterpret_cast<const uint32_t*>(&hi);
  *reinterpret_cast<uint2*>(p) = raw;
}

// out[t] = Σ_j w[t,j] · y[pos_of[t,j]]; pos_of -1 (an expert id out of range) contributes nothing.
// Grid (T, ceil(H / (kMoeCombineThreads · kMoeCombineVec))), kMoeCombineThreads threads; H a
// multiple of 4 with 16-byte aligned rows. Y is bf16 (grouped-GEMM path) or f32 (GEMV path).
template <typename Y, typename T>
__global__ void __launch_bounds__(kMoeCombineThreads)
    moe_combine_kernel(const Y* __restrict__ y, const int* __restrict__ pos_of, const int* __restrict__ ids,
                       const float* __restrict__ w, int k, int64_t H, T* __restrict__ out) {
  __shared__ int s_pos[kMoeMaxTopK];
  __shared__ float s_w[kMoeMaxTopK];
  pdl_enter();
  const int64_t t = blockIdx.x;
  if (threadIdx.x < 32) {
    // Rank of slot j in ascending id order, ties to the lower slot (a stable sort).
    const int j = threadIdx.x;
    const int id = j < k ? ids[t * k + j] : INT_MAX;
    int rank = 0;
    for (int o = 0; o < k; ++o) {
      const int other = __shfl_sync(0xffffffffu, id, o);
      rank += other < id || (other == id && o < j);
    }
    if (j < k) s_pos[rank] = pos_of[t * k + j], s_w[rank] = w[t * k + j];
  }
  __syncthreads();
  const int64_t i = (int64_t(blockIdx.y) * blockDim.x + threadIdx.x) * kMoeCombineVec;
  if (i >= H) return;
  float acc[kMoeCombineVec] = {0.f, 0.f, 0.f, 0.f};
  for (int j0 = 0; j0 < k; j0 += 8) {
    float v[8][kMoeCombineVec];
#pragma unroll
    for (int u = 0; u < 8; ++u) {  // every load of the batch before any sum
      const int p = j0 + u < k ? s_pos[j0 + u] : -1;
      if (p >= 0) load4(y + int64_t(p) * H + i, v[u]);
    }
#pragma unroll
    for (int u = 0; u < 8; ++u) {
      if (j0 + u >= k || s_pos[j0 + u] < 0) continue;
      const float wj = s_w[j0 + u];
#pragma unroll
      for (int e = 0; e < kMoeCombineVec; ++e) acc[e] += wj * v[u][e];
    }
  }
  store4(out + t * H + i, acc);
}

// The launch shape of moe_combine_kernel for T tokens of H elements.
inline dim3 moe_combine_grid(int64_t T, int64_t H) {
  const int64_t per_block = int64_t(kMoeCombineThreads) * kMoeCombineVec;
  return dim3(unsigned(T), unsigned((H + per_block - 1) / per_block));
}

}  // namespace gs::cuda
