// CUDA graphs for decode steps. A decode step of B sequences launches a few hundred kernels
// (E2B: 35 layers x ~12 ops); launched one by one from the host they take longer than the GPU needs
// to run them at small batch. Here the forward of a decode step is recorded once per shape and
// replayed with one launch.
//
// What fixes a graph's shape: the number of rows B (the batch is padded up to a bucket: 1, 2, 4, 8,
// then multiples of 8) and the attention launch plan, which depends on the longest context
// (split-KV count, page-table stride). Contexts are bucketed by powers of two, so a graph keyed
// (B, context bucket) serves every step whose sequences fit; the kernels read each sequence's real
// length from the device, so a shorter context only leaves some key splits idle.
//
// Every per-step input lives in one persistent device buffer, uploaded with one copy before each
// replay; graphs of different shapes lay the buffer out differently and each records its own views.
// Padding rows decode token 0 at position 0 over one key of a page the first sequence holds (so no
// row reads unwritten memory) and write no K/V; their logits are computed and never sampled.
//
// A shape seen for the first time runs eagerly (that sizes every workspace and GEMM plan), is then
// captured, and later steps of that shape replay it.
#pragma once
#include <map>
#include <utility>
#include <vector>

#include "model/gemma4_model.h"
#include "ops/kv_cache.h"
#include "runner/batch_builder.h"

namespace gs {

struct DecodeGraphOptions {
  int max_batch = 0;     // largest decode batch replayed from a graph; 0: graphs off
  int max_kv_len = 0;    // longest context a graph step may have (the model length)
};

class DecodeGraphs {
 public:
  // max_batch must not exceed the rows the model reserved (tokens and logit rows).
  DecodeGraphs(Gemma4Model& model, KvCache& cache, int page_size, DecodeGraphOptions opts);
  ~DecodeGraphs();
  DecodeGraphs(const DecodeGraphs&) = delete;
  DecodeGraphs& operator=(const DecodeGraphs&) = delete;

  // Whether a step of these sequences (one token each, written to the cache) can run here.
  bool accepts(const std::vector<SequenceStep>& steps) const;
  // Runs the forward of one decode step; ids[i] is sequence i's token, except that each (i, j) of
  // `feedback` takes it from element j of `feedback_src` on the device (a token the previous step
  // sampled and the host has not seen yet). Returns the logits of the padded batch: rows
  // [0, steps.size()) are the sequences', in order.
  ForwardOutput forward(const std::vector<SequenceStep>& steps, const std::vector<int>& ids, const Tensor& feedback_src = {},
                        const std::vector<std::pair<int, int>>& feedback = {});

  int num_graphs() const { return int(graphs_.size()); }
  int bucket_rows(int n) const;        // the padded batch size of n sequences
  int bucket_context(int kv_len) const;

 private:
  struct Layout;                        // offsets of each input inside the packed buffer
  Layout layout(int rows, int pages_per_seq) const;
  AttentionBatch views(const Layout& l, int rows, int context) const;

  Gemma4Model& model_;
  Backend& be_;
  KvCache& cache_;
  int page_size_;
  DecodeGraphOptions opts_;
  bool groups_[kNumKvGroups] = {false, false};  // which KV groups the model has layers in
  Tensor inputs_;                       // i32, the packed per-step inputs of the largest shape
  std::vector<int> host_;               // its host staging

  struct Graph {
    int handle = -1;
    ForwardOutput out;
  };
  std::map<std::pair<int, int>, Graph> graphs_;  // (rows, context bucket) -> graph
};

}  // namespace gs
