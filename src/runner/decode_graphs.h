// CUDA graphs for decode and speculative-verify steps. A decode step of B sequences launches a few
// hundred kernels (E2B: 35 layers x ~12 ops); launched one by one from the host they take longer than
// the GPU needs to run them at small batch. Here the forward of such a step is recorded once per shape
// and replayed with one launch.
//
// A step fits when every sequence brings the same number of rows, all sampled: one token (decode) or
// its newest token plus K drafts (verify). Its shape (padded sequences, rows each, context bucket) and
// the packing of its inputs are GraphStepInputs' (runner/graph_step_inputs.h); padding rows' logits
// are computed and never sampled.
//
// A shape seen for the first time runs eagerly (that sizes every workspace and GEMM plan), is then
// captured, and later steps of that shape replay it.
#pragma once
#include <map>
#include <utility>
#include <vector>

#include "model/gemma4_model.h"
#include "ops/kv_cache.h"
#include "runner/graph_step_inputs.h"

namespace gs {

struct DecodeGraphOptions {
  int max_batch = 0;     // most sequences of a step replayed from a graph; 0: graphs off
  int max_kv_len = 0;    // longest context a graph step may have (the model length)
  int max_q_len = 1;     // most rows per sequence (1 + the speculative tokens when speculating)
  int max_rows = 0;      // most rows of a padded step (the rows the model reserved); 0: max_batch x max_q_len
};

class DecodeGraphs {
 public:
  DecodeGraphs(Gemma4Model& model, KvCache& cache, int page_size, DecodeGraphOptions opts);
  ~DecodeGraphs();
  DecodeGraphs(const DecodeGraphs&) = delete;
  DecodeGraphs& operator=(const DecodeGraphs&) = delete;

  // Whether a step of these sequences (the same q_len each, written to the cache) can run here.
  bool accepts(const std::vector<SequenceStep>& steps) const;
  // Runs the forward of one step; ids are the rows' tokens in order, except that each (i, j) of
  // `feedback` takes row i's from element j of `feedback_src` on the device (a token the previous
  // step sampled and the host has not seen yet). Returns the logits of the padded batch: rows
  // [0, steps.size() * q_len) are the sequences', in order.
  ForwardOutput forward(const std::vector<SequenceStep>& steps, const std::vector<int>& ids, const Tensor& feedback_src = {},
                        const std::vector<std::pair<int, int>>& feedback = {});

  int num_graphs() const { return int(graphs_.size()); }
  int bucket_rows(int n) const { return inputs_.bucket_seqs(n); }  // padded sequence count of n
  int bucket_context(int kv_len) const { return inputs_.bucket_context(kv_len); }

 private:
  Gemma4Model& model_;
  Backend& be_;
  KvCache& cache_;
  GraphStepInputs inputs_;

  struct Graph {
    int handle = -1;
    ForwardOutput out;
  };
  std::map<GraphStepShape, Graph> graphs_;
};

}  // namespace gs
