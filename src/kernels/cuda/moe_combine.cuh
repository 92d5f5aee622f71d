// The last step of both MoE expert paths: each token gathers its k expert outputs and sums them
// weighted, in f32, in ascending expert order (as the reference adds experts one after the other),
// and rounds once. A gather, not a scatter: no atomics, so the sum does not depend on which
// expert's kernel finished first.
#pragma once
#include "kernels/cuda/device_math.cuh"

namespace gs::cuda {

constexpr int kMoeMaxTopK = 32;

// out[t] = Σ_j w[t,j] · y[pos_of[t,j]]; pos_of -1 (an expert id out of range) contributes nothing.
// One block per token. Y is bf16 (grouped-GEMM path) or f32 (GEMV path).
template <typename Y, typename T>
__global__ void moe_combine_kernel(const Y* __restrict__ y, const int* __restrict__ pos_of,
                                   const int* __restrict__ ids, const float* __restrict__ w, int k, int64_t H,
                                   T* __restrict__ out) {
  pdl_enter();
  const int64_t t = blockIdx.x;
  int order[kMoeMaxTopK];
  for (int j = 0; j < k; ++j) order[j] = j;
  for (int a = 1; a < k; ++a)  // insertion sort of k <= 32 ids; every thread does the same
    for (int b = a; b > 0 && ids[t * k + order[b - 1]] > ids[t * k + order[b]]; --b) {
      const int tmp = order[b];
      order[b] = order[b - 1];
      order[b - 1] = tmp;
    }
  for (int64_t i = threadIdx.x; i < H; i += blockDim.x) {
    float acc = 0.f;
    for (int jj = 0; jj < k; ++jj) {
      const int j = order[jj];
      const int p = pos_of[t * k + j];
      if (p >= 0) acc += w[t * k + j] * to_f32(y[int64_t(p) * H + i]);
    }
    out[t * H + i] = from_f32<T>(acc);
  }
}

}  // namespace gs::cuda
