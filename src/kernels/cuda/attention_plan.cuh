// The launch plan of one paged_attention call: which tile kernel, its arguments and grid, and
// whether the keys are split. Planned on the host from the batch's host mirrors only, so
// planning never waits for the device. Tests and the bench plan with a forced kernel to check
// and time every variant.
#pragma once
#include "kernels/cuda/attention_params.cuh"
#include "kernels/cuda/kernel_policy.h"
#include "ops/attention_batch.h"
#include "ops/backend.h"
#include "ops/kv_cache.h"

namespace gs::cuda::attn {

struct AttentionPlan {
  TileKernel kernel = TileKernel::Hd256Narrow;
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

// How split keys are merged (kernel_policy.h); Auto: as the installed policy says.
using gs::cuda::CombineMode;

// Whether launch_plan(plan, stream, mode) merges the splits inside the attention kernel (when the
// stream can get split counters).
bool fuses_combine(const AttentionPlan& plan, CombineMode mode = CombineMode::Auto);

// Launches the tile kernel, then the combine kernel when the keys were split and not merged in it.
void launch_plan(const AttentionPlan& plan, cudaStream_t stream, CombineMode mode = CombineMode::Auto);

}  // namespace gs::cuda::attn
