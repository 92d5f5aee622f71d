// Builds the AttentionBatch of one step from its SequenceSteps: how much of each sequence is cached,
// how many new tokens it brings, and its page tables. Shared by the engine's runner and the
// single-sequence tools (logits, tests).
#pragma once
#include <vector>

#include "ops/attention_batch.h"
#include "ops/backend.h"
#include "runner/sequence_step.h"

namespace gs {

// Uploads the batch tensors with `backend`. The page tables are padded with -1 to the longest.
AttentionBatch build_attention_batch(Backend& backend, const std::vector<SequenceStep>& seqs, int page_size);

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
