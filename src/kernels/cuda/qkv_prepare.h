// The attention prologue in one kernel (qkv_prepare.cu): per head q_norm / k_norm (weight [d]),
// RoPE (default or proportional, rotate-half), v_norm (no weight), and the paged KV write.
// See Backend::qkv_prepare for the contract.
#pragma once
#include <cuda_runtime.h>

#include "ops/backend.h"

namespace gs::cuda {

void launch_qkv_prepare(const Tensor& qkv, QkvLayout layout, const AttentionParams& p, const RopeSpec& rope,
                        const Tensor& q_norm_w, const Tensor* k_norm_w, float eps, const AttentionBatch& batch,
                        KvGroup group, KvPool& pool, int cache_layer, const Tensor& q_out, cudaStream_t stream);

}  // namespace gs::cuda
