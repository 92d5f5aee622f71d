// One drafting round without the engine, for `gemmaserve draft` and the drafter parity tests: the
// target runs every token of a context but the last (one prefill into a fresh paged cache), then
// the drafter proposes K tokens to follow the whole context, seeded with its last token and the
// target's final-normed hidden state of the position before it (gemma4-architecture.md §5.2).
#pragma once
#include <vector>

#include "model/gemma4_drafter.h"
#include "model/gemma4_model.h"
#include "ops/kv_cache.h"
#include "runner/batch_builder.h"

namespace gs {

struct ContextDraft {
  std::vector<int> tokens;    // the K greedy draft tokens
  std::vector<float> logits;  // f32 [K, V]: each draft step's logits (the centroid head's mask applied)
  std::vector<float> seed_hidden;  // [Ht]: the target's final-normed state that seeded the first step
  std::vector<float> projected;    // [K, Ht]: each step's post_projection output (the next step's state)
};

// The state a round drafts from: the target's cache after its prefill of ctx[0..n) (every page
// kept: the drafter's sliding layers read W+1 keys, one more than a decode keeps), the hidden state
// of its last row, and the query-only batch of a draft step over that cache.
struct DraftContext {
  LinearPages pages;
  KvCache cache;
  Tensor seed_hidden;          // [1, H]: a view into the target's workspace, valid until its next forward
  AttentionBatch draft_batch;  // one query-only row (the drafter's convention)
  int n = 0;                   // tokens the target ran; ctx[n] seeds the first draft step
};
// `ctx` needs at least two tokens, each in the vocabulary. The drafter's config must be bound to the
// target's; reserves the drafter for one row.
DraftContext prefill_for_drafting(Gemma4Model& target, Gemma4Drafter& drafter, const std::vector<int>& ctx,
                                  int page_size = 16);

// `ctx` needs at least two tokens. The drafter's config must be bound to the target's.
ContextDraft draft_after_context(Gemma4Model& target, Gemma4Drafter& drafter, const std::vector<int>& ctx,
                                 int num_draft_tokens, int page_size = 16);

}  // namespace gs
