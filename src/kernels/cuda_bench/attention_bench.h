// Timing of the attention kernels for `gemmaserve bench-kernels` and the (disabled) attention
// bench test. Not part of the kernel library: the CLI and the tests link it (gs_kernels_bench).
#pragma once
#include <string>
#include <vector>

namespace gs::cuda {

// Micro-benchmark of paged_attention on the current device, for `gemmaserve bench-kernels` and the
// attention bench test: 8k-token prefills (hd 512 causal, hd 256 sliding), decode batches of 64 at
// 4k context, a verify batch and a 4k-token prefill holding four 280-token images (the vision
// overlay; the mma.sync kernel the overlay used to fall back to is timed next to the dispatcher's
// choice), on random data in a shuffled paged cache. Medians of `reps` calls
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
