// How the KV budget is split between the two pools, and the start-up printout of it.
//
// The default split (`--swa-full-tokens-ratio` unset): a request of length L needs L tokens in the
// full pool but only about W - 1 + (its share of a prefill chunk) + one partial page in the sliding
// pool, however long it is. We size the pools so that max_num_seqs requests of equal length run
// both pools dry at the same moment: find the length L at which that many requests exactly fill the
// budget, then ratio = sliding tokens per request / full tokens per request at that L. A big budget
// or few sequences give long L and a small ratio (the sliding pool stays near W per request); a
// small budget or many sequences give short L and a ratio near 1. Either way each pool can hold at
// least one request of max_model_len (full) and one window plus a whole chunk (sliding).
#pragma once
#include <cstddef>
#include <string>

#include "model/model_config.h"

namespace gs {

struct MemoryPlanInput {
  size_t kv_bytes_per_token[kNumKvGroups] = {0, 0};  // K+V over the group's cache layers; 0: no such layers
  int window = 0;                  // sliding window W
  int page_size = 16;
  int max_model_len = 0;
  bool max_model_len_explicit = false;  // false: may be lowered to what fits, with a warning
  int max_num_seqs = 1;
  int max_num_batched_tokens = 1;
  double swa_full_tokens_ratio = 0;     // 0: derive
  size_t kv_budget_bytes = 0;
  // For the printout only.
  size_t weights_bytes = 0, workspace_bytes = 0;  // both include the vision tower's, when loaded
  size_t vision_weights_bytes = 0, vision_workspace_bytes = 0;  // the tower's share; 0: text only
  int vision_max_patches = 0;                                     // patches of one tower pass
  std::string backend;
};

struct MemoryPlan {
  MemoryPlanInput in;
  int num_pages[kNumKvGroups] = {0, 0};
  size_t page_bytes[kNumKvGroups] = {0, 0};
  double swa_full_tokens_ratio = 0;
  int max_model_len = 0;           // possibly lowered from the input
  std::string warning;             // set when max_model_len was lowered

  // Pages one request of `len` tokens holds at most in group g.
  int pages_per_request(KvGroup g, int len) const;
  // How many requests of `len` tokens fit in both pools at once.
  long long requests_that_fit(int len) const;
  std::string describe() const;
};

// Throws gs::Error when the budget cannot hold one request of an explicit max_model_len.
MemoryPlan plan_kv_memory(const MemoryPlanInput& in);

}  // namespace gs
