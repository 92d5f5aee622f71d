// The last step of both MoE expert paths: each token gathers its k expert outputs and sums them
// weighted, in f32, in ascending expert order (as the reference adds experts one after the other),
// and rounds once. A gather, not a scatter: no atomics, so the sum does not depend on which
// expert's kernel finished first.
//
// It is latency-bound (at decode a token's k rows are a few KB): the first warp sorts the token's
// (expert, row, weight) triples once into shared memory, and each thread then issues the loads of
// up to 8 expert rows before it adds any of them, rather than walking the k rows one dependent
// load after another (docs/kernel-policy.md, "MoE").
#pragma once
#include <climits>
#include <type_traits>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_math.cuh"
#include "kernels/cuda/launch_util.h"
#include "kernels/cuda/moe.h"

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

// Token t's k (row, weight) pairs in ascending expert id order (ties to the lower slot, a stable
// sort) into s_pos / s_w, by the block's first warp. Call from every thread; ends with a barrier.
__device__ __forceinline__ void sort_token_rows(const int* __restrict__ pos_of, const int* __restrict__ ids,
                                                const float* __restrict__ w, int k, int64_t t, int* s_pos,
                                                float* s_w) {
  if (threadIdx.x < 32) {
    // Rank of slot j in ascending id order, ties to the lower slot.
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
}

// acc = Σ_j s_w[j] · y[s_pos[j], i .. i+3], in the sorted order; the loads of up to 8 rows are
// all issued before any of them is added.
template <typename Y>
__device__ __forceinline__ void combine4(const Y* __restrict__ y, int64_t H, int64_t i, int k, const int* s_pos,
                                         const float* s_w, float (&acc)[kMoeCombineVec]) {
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
  sort_token_rows(pos_of, ids, w, k, t, s_pos, s_w);
  const int64_t i = (int64_t(blockIdx.y) * blockDim.x + threadIdx.x) * kMoeCombineVec;
  if (i >= H) return;
  float acc[kMoeCombineVec] = {0.f, 0.f, 0.f, 0.f};
  combine4(y, H, i, k, s_pos, s_w, acc);
  store4(out + t * H + i, acc);
}

// The combine with the rest of an MoE layer's sum (Backend::moe_experts_sum) in the same pass:
//   out[t] = rms_norm(dense[t])·dense_w + rms_norm(m[t])·experts_w,  m = the combine, bf16
// with the roundings of the separate kernels (each norm's output, m and the sum stored as bf16).
// One block per token holds the whole row: H / 4 threads (a multiple of 32, at most 1024). out may
// alias dense: each thread reads its 4 elements before it writes them.
template <typename Y>
__global__ void __launch_bounds__(1024)
    moe_combine_sum_kernel(const Y* __restrict__ y, const int* __restrict__ pos_of, const int* __restrict__ ids,
                           const float* __restrict__ w, int k, int64_t H, const bf16* dense,
                           const bf16* __restrict__ dense_w, const bf16* __restrict__ experts_w, float eps,
                           bf16* out) {
  __shared__ int s_pos[kMoeMaxTopK];
  __shared__ float s_w[kMoeMaxTopK];
  __shared__ float scratch[32];
  pdl_enter();
  const int64_t t = blockIdx.x;
  sort_token_rows(pos_of, ids, w, k, t, s_pos, s_w);
  const int64_t i = int64_t(threadIdx.x) * kMoeCombineVec;
  const bool in = i < H;
  float m[kMoeCombineVec] = {0.f, 0.f, 0.f, 0.f}, d[kMoeCombineVec] = {0.f, 0.f, 0.f, 0.f};
  float ss_m = 0.f, ss_d = 0.f;
  if (in) {
    combine4(y, H, i, k, s_pos, s_w, m);
    load4(dense + t * H + i, d);
#pragma unroll
    for (int e = 0; e < kMoeCombineVec; ++e) {
      m[e] = rnd<bf16>(m[e]);
      ss_m += m[e] * m[e];
      ss_d += d[e] * d[e];
    }
  }
  const float inv_m = rsqrtf(block_sum(ss_m, scratch) / float(H) + eps);
  const float inv_d = rsqrtf(block_sum(ss_d, scratch) / float(H) + eps);
  if (!in) return;
  float wd[kMoeCombineVec], we[kMoeCombineVec], o[kMoeCombineVec];
  load4(dense_w + i, wd);
  load4(experts_w + i, we);
#pragma unroll
  for (int e = 0; e < kMoeCombineVec; ++e)
    o[e] = rnd<bf16>(d[e] * inv_d * wd[e]) + rnd<bf16>(m[e] * inv_m * we[e]);
  store4(out + t * H + i, o);
}

// Launches the combine of T tokens' expert rows y into out (OutT), or with sum the layer's sum
// (moe_combine_sum_kernel; out bf16, the caller checked moe_sum_supported(H)).
template <typename Y, typename OutT>
void launch_moe_combine(const Y* y, const int* pos_of, const int* ids, const float* w, int k, int64_t T, int64_t H,
                        OutT* out, const MoeSum* sum, cudaStream_t stream) {
  if (sum) {
    if constexpr (std::is_same_v<OutT, bf16>) {
      launch_pdl("moe_combine_sum_kernel", moe_combine_sum_kernel<Y>, unsigned(T), unsigned(H / kMoeCombineVec), 0,
                 stream, y, pos_of, ids, w, k, H, sum->dense->template ptr<bf16>(),
                 sum->dense_norm->template ptr<bf16>(), sum->experts_norm->template ptr<bf16>(), sum->eps, out);
      GS_CUDA_LAUNCHED("moe combine + sum");
      return;
    }
    fail("moe_experts: the layer sum needs a bf16 output");
  }
  const int64_t per_block = int64_t(kMoeCombineThreads) * kMoeCombineVec;
  const dim3 grid(unsigned(T), unsigned((H + per_block - 1) / per_block));
  launch_pdl("moe_combine_kernel", moe_combine_kernel<Y, OutT>, grid, kMoeCombineThreads, 0, stream, y, pos_of, ids, w,
             k, H, out);
  GS_CUDA_LAUNCHED("moe combine");
}

}  // namespace gs::cuda
