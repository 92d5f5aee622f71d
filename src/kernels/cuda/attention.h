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

// Micro-benchmark of paged_attention on the current device, for `gemmaserve bench-kernels` and the
// attention bench test: 8k-token prefills (hd 512 causal, hd 256 sliding), decode batches of 64 at
// 4k context and a verify batch, on random data in a shuffled paged cache. Medians of `reps` calls
// timed with CUDA events. `all_kernels`: also time every other tile kernel of the shape's head
// dim (what the dispatcher's choices were tuned with). `only`: just the shapes whose name
// contains it (empty: all).
struct AttentionBenchResult {
  std::string name;
  std::string kernel;            // tile kernel that ran ("auto: ..." when the dispatcher chose)
  int splits = 1;                // key splits of the launch
  double ms = 0;                 // median time of one call
  double tflops = 0;             // counting only visible (query, key) pairs: 4·head_dim flops each
  double kv_tbytes_per_s = 0;    // K and V bytes of the visible keys, read once per KV head
};
std::vector<AttentionBenchResult> bench_attention(int reps = 20, bool all_kernels = false,
                                                 const std::string& only = "");

}  // namespace gs::cuda
