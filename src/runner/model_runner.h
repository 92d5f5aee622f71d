// Runs one engine step on the model: the step's SequenceSteps (runner/sequence_step.h, the shape the
// scheduler writes) become the token ids and one AttentionBatch, Gemma4Model::forward computes the
// logits of the rows that need them, and sampling, penalties and log-probabilities run on the
// backend. The runner knows nothing about requests or scheduling.
//
// launch() enqueues the whole step (on the cuda backend every op is asynchronous, so it returns
// while the device works) and the copy of its sampled ids and log-probabilities into pinned host
// buffers; collect() waits for that copy only. Between the two the engine thread is free.
//
// Overlap: while step N runs, step N+1 may be launched (can_launch_ahead()), so the device never
// waits for the host to schedule. A sequence whose newest token step N is still sampling then sets
// feedback_row: its input id is copied from step N's sampled ids on the device. Steps with
// prompt-logprob rows cannot be overtaken (their logits would be overwritten before collect()
// reads them). collect() returns the oldest launched step's outputs.
//
// Decode steps (every sequence brings one token and wants it sampled, no prompt logprobs) replay a
// CUDA graph when the backend records them and graphs were enabled (runner/decode_graphs.h).
//
// Tensor parallelism: when the model is rank 0 of a group (Gemma4Model::rank_group()), the runner
// also makes a follower runner and a KV cache (same pages) for every other rank, and launch(),
// collect() and reset() run on every rank's thread. Followers run the forward only (the
// collectives need every rank); rank 0 samples from its gathered logits and broadcasts the ids, so
// that a step launched ahead reads its input ids on every rank's device. A rank that fails
// leaves the group unusable: the runner logs it and ends the process (nothing waits forever).
//
// Logit rows: the sampled rows come first (the last row of each chunk that reaches the end of its
// known tokens), then the prompt-logprob rows; both slices are contiguous in the logits tensor.
#pragma once
#include <deque>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "model/gemma4_model.h"
#include "ops/backend.h"
#include "ops/kv_cache.h"
#include "runner/decode_graphs.h"
#include "runner/sequence_step.h"

namespace gs {

struct RunnerOutput {
  // One per sampled row (SequenceStep::sampled_rows(): one, or 1 + num_drafts for a verify), in
  // row order: the token drawn, its logprob, the top-n alternatives when asked.
  std::vector<int> tokens;
  std::vector<float> logprobs;
  std::vector<std::vector<std::pair<int, float>>> top;
  int hidden_row = -1;  // row of last_hidden() holding the first sampled row's final-normed state
  // One per prompt-logprob row: logprob of tokens[p + 1] and the top-n of that row.
  std::vector<float> prompt_logprobs;
  std::vector<std::vector<std::pair<int, float>>> prompt_top;
};

class ModelRunner {
 public:
  static constexpr int kMaxTopLogprobs = 20;  // OpenAI's limit

  // max_tokens / max_logit_rows: the step limits the model was reserved for. graphs.max_batch > 0
  // enables decode graphs on backends that support them (capped at the reserved rows).
  ModelRunner(Gemma4Model& model, KvCache& cache, int page_size, int max_tokens, int max_logit_rows,
              DecodeGraphOptions graphs = {}, bool follower = false);
  ~ModelRunner();

  void launch(const std::vector<SequenceStep>& seqs);
  // Whether launch() may be called now although a step is still in flight.
  bool can_launch_ahead() const;
  int steps_in_flight() const { return int(inflight_.size()); }
  // The outputs of the oldest launched step, one per SequenceStep.
  std::vector<RunnerOutput> collect();
  // The final-normed hidden states [rows, H] of the last collected step's logit rows (sampled rows
  // first, as RunnerOutput::hidden_row counts them): a drafter's seeds. Valid until the next launch().
  const Tensor& last_hidden() const { return last_hidden_; }
  // After a failed step: waits for whatever was enqueued and forgets every launched step.
  void reset();
  // fn(backend, cache) for every rank's KV cache, each on its rank's thread (rank 0's: the
  // caller's): a benchmark fills the caches of its pretend context this way.
  void for_each_rank_cache(const std::function<void(Backend&, KvCache&)>& fn);

  // Steps run so far from a graph / eagerly, and graphs recorded (startup logs, bench-decode).
  struct Counters {
    uint64_t graph_steps = 0, eager_steps = 0;
    int graphs = 0;
  };
  Counters counters() const;

 private:
  void launch_here(const std::vector<SequenceStep>& seqs);
  std::vector<RunnerOutput> collect_here();
  void reset_here();
  // Runs fn(rank) on every rank (0: this runner); a failure ends the process (see above).
  void on_every_rank(const std::function<void(int rank)>& fn);

  Gemma4Model& model_;
  Backend& be_;
  bool follower_ = false;
  RankGroup* group_ = nullptr;                     // set on rank 0 of a tensor-parallel model
  std::vector<KvCache> rank_caches_;               // ranks 1..N-1
  std::vector<std::unique_ptr<ModelRunner>> followers_;
  KvCache& cache_;
  int page_size_, max_tokens_, max_logit_rows_;
  Tensor ids_, logit_rows_, out_ids_, out_logprobs_, top_ids_, top_logprobs_;
  std::unique_ptr<DecodeGraphs> graphs_;
  Counters counters_;
  Tensor last_hidden_;

  // Pinned host copies of one step's sampled results; two, so a step can be launched while the
  // one before it still owns its copies.
  struct HostResults {
    std::shared_ptr<void> ids, logprobs, top_ids, top_logprobs;
  };
  HostResults host_[2];
  int next_host_ = 0;

  struct Launched {
    std::vector<SequenceStep> seqs;
    ForwardOutput fwd;        // its logits are read by collect() for prompt-logprob rows
    AttentionBatch batch;     // kept alive while the device may read it
    int num_sampled = 0, num_prompt_rows = 0, top_n = 0;
    int host = 0;             // index into host_
    uint64_t fence = 0;       // passed once the step and its copies ran
  };
  std::deque<Launched> inflight_;  // oldest first, at most two

  // Logit adjustments, sampling and top-logprobs of the step's sampled rows, and the async copies of
  // their results into the next pinned host buffers.
  void enqueue_sampling(Launched& st);
};

}  // namespace gs
