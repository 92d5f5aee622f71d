// What one forward step computes, as the kernels see it: a ragged batch of sequences, each
// contributing q_len new query rows (prefill chunk, decode token, or verify tokens) on top of
// a cached prefix. Built on the host by the runner, uploaded once per step; the same tensors
// serve every layer.
#pragma once
#include <vector>

#include "core/tensor.h"
#include "ops/kv_layout.h"

namespace gs {

struct AttentionBatch {
  int num_seqs = 0;
  int num_tokens = 0;     // rows of this step (sum of q_len)
  int max_q_len = 0;
  int max_kv_len = 0;
  int page_size = 0;

  // Device tensors (i32).
  Tensor positions;       // [T] absolute position of each row
  Tensor token_seq;       // [T] sequence index of each row
  Tensor q_start;         // [S+1] first row of each sequence (cumulative q_len)
  Tensor kv_len;          // [S] context length after this step (cached + new tokens)
  Tensor mm_block;        // [T] vision block id of each row, -1 for text; undefined when none
  Tensor page_table[kNumKvGroups];    // [S, max_pages(g)]; -1 where no page (freed / unused)
  Tensor slot_mapping[kNumKvGroups];  // [T] page*page_size + offset where row t's K/V goes; -1: no write

  // Host mirrors of the small tensors, for kernels' launch planning and the CPU backend.
  std::vector<int> h_positions, h_token_seq, h_q_start, h_kv_len, h_mm_block;
  std::vector<int> h_page_table[kNumKvGroups];
  std::vector<int> h_slot_mapping[kNumKvGroups];
  int max_pages[kNumKvGroups] = {0, 0};
  // Every sequence's rows are its last q_len positions (row i at kv_len - q_len + i), as in
  // prefill, chunked prefill and decode steps that append to the cache: kernels may then compute
  // a row's position instead of loading it. Set by build_attention_batch (rows_end_their_context);
  // false, the safe default, in a batch built by hand.
  bool rows_end_context = false;
};

}  // namespace gs
