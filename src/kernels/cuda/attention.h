// Paged attention kernels (FlashAttention-style, tensor cores, f32 accumulation) for Gemma-4's two
// head dims (256 sliding, 512 full), GQA, causal / sliding-window / vision-block masks.
// Called by the cuda backend's attention op; implemented in attention_*.cu.
#pragma once
#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "ops/attention_batch.h"
#include "ops/backend.h"
#include "ops/kv_cache.h"

namespace gs::cuda {

// Chooses the kernel (decode split-KV, prefill/extend tiles, verify) from the batch shape and
// launches it on `stream` without synchronising (graph-capturable). q: bf16 [T, Nq·d]; out: bf16
// [T, Nq·d]. `workspace` is device scratch for split-KV partials: attention_workspace_bytes()
// bytes lets every split plan run; less (or null) only limits how far the keys are split.
void paged_attention(const Tensor& q, const AttentionBatch& batch, KvGroup group, const KvPool& pool, int cache_layer,
                     const AttentionParams& p, const Tensor& out, void* workspace, size_t workspace_bytes,
                     cudaStream_t stream);
size_t attention_workspace_bytes(int max_tokens, int max_seqs, int num_q_heads, int head_dim);

}  // namespace gs::cuda
