// One sequence's share of a model step, in the one shape the scheduler writes and the runner and the
// batch builder read (nano-vllm's habit: the runner builds its tensors straight from the scheduler's
// view). The scheduler fills what runs and where its K/V lives, the engine adds how the last row is
// sampled, and the runner turns a step's list into its token ids, its AttentionBatch
// (build_attention_batch) and its logit rows.
#pragma once
#include <vector>

#include "ops/attention_batch.h"
#include "ops/backend.h"
#include "vision/prepared_image.h"

namespace gs {

struct SequenceStep {
  // What runs: tokens [start, start + q_len) of `tokens` (every token the sequence knows) at
  // positions start.., attending to the `start` tokens already in the cache and to each other.
  const std::vector<int>* tokens = nullptr;
  int start = 0;
  int q_len = 0;
  // Page tables by KV group (null: the model has no such layers): entry i holds the physical page of
  // logical page i, -1 for a freed sliding page. They cover positions [0, start + q_len).
  const std::vector<int>* page_table[kNumKvGroups] = {nullptr, nullptr};
  const std::vector<int>* mm_block = nullptr;  // vision block id by position (the prompt's), or null
  // The images behind the vision blocks (block b is (*images)[b]), or null: the runner runs the
  // tower for the blocks this chunk prefills (a chunk holds an image whole, or none of it).
  const std::vector<PreparedImagePtr>* images = nullptr;
  bool write_kv = true;                        // false: a query-only step (a drafter's), nothing written
  // Rows sit at positions start + i + position_shift: -1 for a drafter that queries at the position
  // of the target's last cached token (vLLM's convention); 0 everywhere else.
  int position_shift = 0;

  // What its rows give.
  int prompt_logprob_rows = 0;  // rows [start, start + n): the logprob of the token after each
  bool sample = false;          // the last row samples the sequence's next token
  // A speculative verify: the chunk ends with this many draft tokens, and its last 1 + num_drafts
  // rows are all sampled (row i with sampling.step + i), each scoring the token after its own.
  int num_drafts = 0;
  SamplingRow sampling;         // seed and step already set
  // Bias, bans and penalties of the sampled rows (Backend::adjust_logits): sampled_rows()
  // consecutive rows, or null when none; read during ModelRunner::launch() only.
  const LogitAdjustRow* adjust = nullptr;
  int logprobs = -1;  // -1: none; 0: the chosen token's; n: plus the top n
  // >= 0: the last token (a placeholder on the host) is sampled row `feedback_row` of the step
  // launched just before this one, which has not been collected.
  int feedback_row = -1;

  int end() const { return start + q_len; }
  int sampled_rows() const { return sample ? 1 + num_drafts : 0; }
  int kv_len() const { return start + (write_kv ? q_len : 0); }  // cached tokens once the step ran
  // The vision block of row r (-1: text, or no block map).
  int mm_block_of_row(int r) const {
    const int p = start + r;
    return mm_block && p < int(mm_block->size()) ? (*mm_block)[size_t(p)] : -1;
  }
};

}  // namespace gs
