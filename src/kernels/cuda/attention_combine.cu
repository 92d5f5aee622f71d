// Second pass of split-KV attention, as its own launch: merges the per-split partial results of
// each (token, query head) row (attention_combine.cuh). Used for the wgmma kernels and when no
// split counters are available; the mma.sync tile and decode kernels otherwise combine in their
// last split CTA.
#include <cuda_bf16.h>

#include "kernels/cuda/attention_combine.cuh"
#include "kernels/cuda/attention_params.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launch_util.h"

namespace gs::cuda::attn {
namespace {

// One CTA per row, four output columns per thread (16-byte loads of the f32 partials).
template <int HD>
__global__ void __launch_bounds__(HD / 4) attention_combine_kernel(const TileArgs a) {
  pdl_enter();
  __shared__ float w[2 * kMaxCombineSplits + 1];
  if (threadIdx.x < 32) combine_weights(a, blockIdx.x, w, w + kMaxCombineSplits, w + 2 * kMaxCombineSplits);
  __syncthreads();
  combine_cols<HD>(a, blockIdx.x, threadIdx.x * 4, w, w[2 * kMaxCombineSplits]);
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
