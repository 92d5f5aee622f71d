// The launch plan of one paged_attention call: which tile kernel, its arguments and grid, and
// whether the keys are split. Planned on the host from the batch's host mirrors only, so
// planning never waits for the device. Tests and the bench plan with a forced kernel to check
// and time every variant.
#pragma once
#include "kernels/cuda/attention_params.cuh"
#include "ops/attention_batch.h"
#include "ops/backend.h"
#include "ops/kv_cache.h"

namespace gs::cuda::attn {

struct AttentionPlan {
  TileKernel kernel = TileKernel::Hd256Wide;
  TileArgs args;
  TileGrid grid;
  int head_dim = 0;
  bool empty = true;  // no rows: nothing to launch
};

// Checks the call (gs::Error naming the offending field) and plans it. `force` replaces the
// dispatcher's choice by another kernel of the same head dim.
AttentionPlan plan_attention(const Tensor& q, const AttentionBatch& batch, KvGroup group, const KvPool& pool,
                             int cache_layer, const AttentionParams& p, const Tensor& out, void* workspace,
                             size_t workspace_bytes, const TileKernel* force = nullptr);

// Launches the tile kernel. Split keys are merged by the kernel's last split CTA (mma.sync tile
// and decode kernels, `fused_combine`), else by the combine kernel launched after it.
void launch_plan(const AttentionPlan& plan, cudaStream_t stream, bool fused_combine = true);

}  // namespace gs::cuda::attn
