// Test harness for gs::cuda::paged_attention: builds a paged KV cache and a ragged batch on the
// GPU from a compact description, runs the kernel on poisoned outputs, and compares against a
// double-precision reference computed here from the same bf16 inputs and the mask rules of
// gemma4-architecture.md §3 (causal, sliding window, vision-block overlay).
//
// Every pool slot that no sequence owns, every slot past a sequence's length and every page the
// case marks as freed is filled with NaN, so a kernel that reads a key it must not read produces
// NaN, and NaN never passes.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace gs::test {

struct SeqCase {
  SeqCase() = default;
  SeqCase(int cached_keys, int new_rows) : cached(cached_keys), q_len(new_rows) {}
  int cached = 0;                 // keys already in the cache
  int q_len = 1;                  // new rows this step (their keys are in the cache too)
  std::vector<int> mm_block;      // optional: vision block of each new row (-1 text)
  std::vector<int> positions;     // optional: explicit positions of the new rows
};

struct AttnCase {
  int head_dim = 256;
  int num_q_heads = 2;
  int num_kv_heads = 1;
  int window = 0;                 // 0: causal
  int page_size = 16;
  bool mm_bidirectional = false;
  bool mm_in_window = false;      // the overlay adds only keys the window admits (transformers 5.17)
  float scale = 1.f;
  float q_amp = 0.5f;             // q ~ U(-q_amp, q_amp), k, v ~ U(-1, 1)
  bool free_below_window = false; // page-table entries of pages wholly below every row's window -> -1
  bool use_workspace = true;      // false: no split-KV workspace (single pass)
  size_t workspace_bytes = 0;     // 0: attention_workspace_bytes() of the batch
  int cache_layers = 2;
  int cache_layer = 1;
  int force_kernel = -1;          // >= 0: run this attn::TileKernel instead of the dispatcher's choice
  bool separate_combine = false;  // split keys merged by the combine kernel (default: forced fused,
                                  // the last split CTA, whatever the dispatcher would choose)
  int graph_replays = 0;          // > 0: also capture the launch in a CUDA graph and replay it this often
  std::vector<SeqCase> seqs;
};

struct AttnResult {
  double rel_err = 0;             // ‖out − ref‖ / ‖ref‖
  int64_t bad_elems = 0;          // elements outside |out − ref| <= 0.02·|ref| + 0.01·max|ref row|
  int64_t nonfinite = 0;          // NaN / inf outputs
  int64_t elems = 0;
  int freed_pages = 0;            // page-table entries set to -1 by free_below_window
  std::string first_bad;          // where the first bad element is, for the failure message
  int splits = 0;                 // key splits the plan used
  int kernel = -1;                // the attn::TileKernel that ran
  int64_t replay_mismatches = 0;  // output elements of any graph replay not bit-equal to the eager run
  std::vector<uint16_t> out;      // the eager run's output (bf16 bits), for bitwise comparisons
};

bool cuda_device_present();

// Runs one case with inputs drawn from `rng`.
AttnResult run_attention_case(const AttnCase& c, std::mt19937_64& rng);

}  // namespace gs::test
