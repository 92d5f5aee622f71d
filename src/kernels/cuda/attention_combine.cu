// Second pass of split-KV attention: merges the per-split partial results of each (token, query
// head) row. Split s holds unnormalised O_s, its running max m_s (log2 domain) and sum l_s; with
// M = max_s m_s the row is Σ 2^(m_s−M)·O_s / Σ 2^(m_s−M)·l_s. Splits that saw no visible key
// (m_s = −inf, l_s = 0) drop out.
#include <cuda_bf16.h>

#include "kernels/cuda/attention_params.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launch_util.h"

namespace gs::cuda::attn {
namespace {

// One CTA per row, four output columns per thread (16-byte loads of the f32 partials).
template <int HD>
__global__ void __launch_bounds__(HD / 4) attention_combine_kernel(const TileArgs a) {
  pdl_enter();
  const int64_t row = blockIdx.x;
  const int64_t rows = int64_t(a.num_tokens) * a.num_q_heads;
  const int col = threadIdx.x * 4;
  float m_max = -INFINITY;
  for (int s = 0; s < a.num_splits; ++s) m_max = fmaxf(m_max, a.part_ml[2 * (s * rows + row)]);
  float l = 0.f;
  float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
  if (m_max != -INFINITY) {
    for (int s = 0; s < a.num_splits; ++s) {
      const int64_t prow = s * rows + row;
      const float m = a.part_ml[2 * prow];
      if (m == -INFINITY) continue;
      const float w = exp2f(m - m_max);
      l += w * a.part_ml[2 * prow + 1];
      const float4 o = *reinterpret_cast<const float4*>(a.part_o + prow * HD + col);
      acc.x += w * o.x, acc.y += w * o.y, acc.z += w * o.z, acc.w += w * o.w;
    }
  }
  const float inv = l > 0.f ? 1.f / l : 0.f;
  __nv_bfloat162 lo = __floats2bfloat162_rn(acc.x * inv, acc.y * inv);
  __nv_bfloat162 hi = __floats2bfloat162_rn(acc.z * inv, acc.w * inv);
  uint2 packed;
  packed.x = *reinterpret_cast<uint32_t*>(&lo);
  packed.y = *reinterpret_cast<uint32_t*>(&hi);
  *reinterpret_cast<uint2*>(a.out + row * HD + col) = packed;
}

}  // namespace

void launch_combine(int head_dim, const TileArgs& a, cudaStream_t stream) {
  const unsigned rows = unsigned(int64_t(a.num_tokens) * a.num_q_heads);
  if (head_dim == 256)
    launch_pdl("attention_combine_kernel", attention_combine_kernel<256>, rows, 64, 0, stream, a);
  else
    launch_pdl("attention_combine_kernel", attention_combine_kernel<512>, rows, 128, 0, stream, a);
  GS_CUDA_LAUNCHED("attention_combine_kernel");
}

}  // namespace gs::cuda::attn
