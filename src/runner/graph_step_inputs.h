// The per-step inputs of a step replayed from a CUDA graph, packed into one persistent device buffer
// (one upload per step) at offsets fixed by the step's shape, so a graph recorded once per shape reads
// each later step's values from the same addresses.
//
// A shape is (sequences, rows per sequence, context bucket): every sequence brings the same q_len
// (1 for decode, K+1 for a speculative verify, 1 for a drafter's query-only rows). Sequences are
// padded up to a bucket (1, 2, 4, 8, then multiples of 8), contexts to a power of two from 256 (the
// attention launch plan, split-KV count and page-table stride, depends on the longest context; the
// kernels read each sequence's real length from the device). Padding sequences run token 0 at
// positions 0.. over the first keys of a page the first sequence holds (so nothing reads unwritten
// memory that the first sequence's rows could see) and write no K/V; their outputs are never read.
#pragma once
#include <vector>

#include "ops/attention_batch.h"
#include "ops/backend.h"
#include "ops/kv_cache.h"
#include "runner/sequence_step.h"

namespace gs {

struct GraphStepShape {
  int seqs = 0;     // padded sequence count
  int q_len = 0;    // rows per sequence
  int context = 0;  // context bucket (tokens)
  int rows() const { return seqs * q_len; }
  bool operator<(const GraphStepShape& o) const {
    return seqs != o.seqs ? seqs < o.seqs : q_len != o.q_len ? q_len < o.q_len : context < o.context;
  }
};

class GraphStepInputs {
 public:
  // Up to max_seqs sequences of up to max_q_len rows, at most max_rows rows in all once padded (0: no
  // bound beyond the other two), contexts up to max_kv_len tokens.
  GraphStepInputs(Backend& backend, const KvCache& cache, int page_size, int max_seqs, int max_q_len, int max_kv_len,
                  int max_rows = 0);

  // Whether these steps fit a shape: the same q_len <= max_q_len for all, within max_rows padded, no image rows, every page
  // table the model needs, contexts within max_kv_len, and either all write K/V (target steps) or
  // none does (a drafter's query-only rows).
  bool fits(const std::vector<SequenceStep>& steps) const;
  GraphStepShape shape_of(const std::vector<SequenceStep>& steps) const;
  int bucket_seqs(int n) const;
  int bucket_context(int kv_len) const;

  struct Packed {
    GraphStepShape shape;
    AttentionBatch batch;  // views into the buffer, host q_start / kv_len mirrors set
    Tensor ids;            // [rows] the rows' input tokens
    Tensor logit_rows;     // [rows] 0..rows-1
  };
  // Packs `steps` (ids: their rows' input tokens in order, steps.size() * q_len of them) and uploads
  // them with one copy.
  Packed pack(const std::vector<SequenceStep>& steps, const std::vector<int>& ids);

 private:
  struct Layout;
  Layout layout(const GraphStepShape& s) const;

  Backend& be_;
  int page_size_, max_seqs_, max_q_len_, max_kv_len_, max_rows_;
  bool groups_[kNumKvGroups] = {false, false};  // which KV groups the model has layers in
  Tensor inputs_;                               // i32, the packed inputs of the largest shape
  std::vector<int> host_;                       // its host staging
};

}  // namespace gs
