// The engine's state of one request while it waits or runs: its tokens (prompt, then generated),
// how many of them have K/V in the cache, and its pages. Owned by the scheduler; touched only on
// the engine thread.
#pragma once
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "engine/kv_manager.h"
#include "core/tensor.h"
#include "engine/request.h"

namespace gs {

struct Sequence {
  // Finished: removed from the scheduler (pages freed, output ended); the object lives on while a
  // launched step may still name it.
  enum class State { Waiting, Running, Finished };

  GenerationRequest req;
  std::vector<int> tokens;       // prompt, then every generated token
  int prompt_len = 0;
  int num_computed = 0;          // leading tokens whose K/V is in the cache
  int cached_prompt_tokens = 0;  // served by the prefix cache at first admission (usage report)
  bool admitted_once = false;
  SeqPages pages;
  State state = State::Waiting;
  uint64_t seed = 0;             // sampling seed: the request's, or one drawn at submission
  int num_preemptions = 0;

  std::unordered_map<int, int> output_counts;  // generated token -> count (penalties)
  // The repetition penalty's prompt tokens (distinct, ascending), when the request has one: kept
  // on the host to tell generated tokens apart from them, and uploaded once as `prompt_set`.
  std::vector<int> prompt_set_ids;
  Tensor prompt_set;
  std::vector<TokenLogprob> prompt_logprobs;   // [prompt_len] when asked; entry 0 stays empty
  bool first_output_sent = false;

  bool in_plan = false;          // scheduler scratch: already given a chunk in the step being built
  // Overlapped scheduling: tokens.back() is a placeholder for the token that the step in flight
  // samples in its row `pending_row`; -1 when every token is known.
  int pending_row = -1;

  // Speculative decoding: the drafter's proposals for the tokens after tokens.back(), verified by
  // the sequence's next step; while that step runs they sit at the end of `tokens` (the verify
  // chunk reads them there), counted by drafts_in_tokens.
  std::vector<int> drafts;
  int drafts_in_tokens = 0;

  int num_generated() const { return int(tokens.size()) - drafts_in_tokens - prompt_len; }
  int remaining() const { return int(tokens.size()) - num_computed; }
  // Vision block id of token position p (-1 for text and for generated tokens).
  int mm_block(int p) const { return p < int(req.mm_block.size()) ? req.mm_block[p] : -1; }
  bool has_images() const {
    for (int b : req.mm_block)
      if (b >= 0) return true;
    return false;
  }
};

}  // namespace gs
