// Builds the AttentionBatch of one step from per-sequence facts the engine knows: how much of the
// sequence is cached, how many new tokens it brings, and its page tables. Shared by the engine's
// runner and the single-sequence tools (logits, tests).
#pragma once
#include <vector>

#include "model/model_config.h"
#include "ops/attention_batch.h"
#include "ops/backend.h"

namespace gs {

struct SeqStep {
  int cached_len = 0;   // tokens of this sequence already in the cache (positions 0..cached_len-1)
  int q_len = 0;        // new tokens this step (their K/V is written by this step)
  // Page tables by KV group: entry i holds the physical page of logical page i, -1 if none
  // (freed sliding page). Must cover positions 0..cached_len+q_len-1 (except freed pages).
  const std::vector<int>* page_table[kNumKvGroups] = {nullptr, nullptr};
  const int* positions = nullptr;  // optional explicit positions of the q_len tokens; default consecutive
  const int* mm_block = nullptr;   // optional vision block ids of the q_len tokens
  bool write_kv = true;            // false: Q-only step (drafter), nothing written
};

// Uploads the batch tensors with `backend`. The page tables are padded with -1 to the longest.
AttentionBatch build_attention_batch(Backend& backend, const std::vector<SeqStep>& seqs, int page_size);

// Whether every sequence's rows are its last q_len positions (AttentionBatch::rows_end_context),
// from the host mirrors; false where they are missing or inconsistent.
bool rows_end_their_context(const AttentionBatch& b);

// A trivial page allocator for tools and tests that run sequences without the engine: pages are
// handed out in order, never freed.
struct LinearPages {
  int page_size = 16;
  int next_page[kNumKvGroups] = {0, 0};
  std::vector<int> table[kNumKvGroups];
  void ensure(int num_tokens);  // grow both tables to cover num_tokens positions
};

}  // namespace gs
