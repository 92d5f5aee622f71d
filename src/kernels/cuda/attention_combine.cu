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

// One CTA per row, four output columns per thread (16-byte loads of the f32 partials). A thread
// loads its columns of 32 splits at a time, the first 32 before the split weights are known (they
// do not depend on them), so up to 32 splits cost one L2 round trip; combine_cols, which the
// fused path keeps, loads them in batches of 8. The sum is combine_cols', in split order, bit for
// bit.
template <int HD>
__global__ void __launch_bounds__(HD / 4) attention_combine_kernel(const TileArgs a) {
  constexpr int kBatch = kCombineBatchSplits;
  pdl_enter();
  __shared__ float w[kMaxCombineSplits + 1];
  const int64_t rows = int64_t(a.num_tokens) * a.num_q_heads, row = blockIdx.x;
  const int col = threadIdx.x * 4;
  float4 part[kBatch];
  auto load_batch = [&](int s0) {
#pragma unroll
    for (int j = 0; j < kBatch; ++j)
      if (s0 + j < a.num_splits)
        part[j] = __ldcg(reinterpret_cast<const float4*>(a.part_o + ((s0 + j) * rows + row) * HD + col));
  };
  load_batch(0);
  if (threadIdx.x < 32) combine_weights(a, row, w, w + kMaxCombineSplits);
  __syncthreads();
  float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
  for (int s0 = 0;;) {
#pragma unroll
    for (int j = 0; j < kBatch; ++j)  // a split that saw no key adds nothing
      if (s0 + j < a.num_splits && w[s0 + j] != 0.f) combine_add(acc, w[s0 + j], part[j]);
    s0 += kBatch;
    if (s0 >= a.num_splits) break;
    load_batch(s0);
  }
  combine_store<HD>(a, row, col, acc, w[kMaxCombineSplits]);
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
