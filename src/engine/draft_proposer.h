// The drafting half of speculative decoding in the engine: after a step's results are applied,
// every sequence that sampled and may speculate gets up to K draft tokens from the MTP assistant
// (model/gemma4_drafter.h), seeded with its newest token and the target's final-normed hidden
// state of the row that produced it; its next step verifies them (engine/speculative_verify.h).
// The drafts of all such sequences run as one batch per draft step, over the target's KV cache.
#pragma once
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "engine/sequence.h"
#include "model/gemma4_drafter.h"
#include "ops/kv_cache.h"
#include "runner/graph_step_inputs.h"

namespace gs {

struct DraftRequest {
  Sequence* seq = nullptr;
  int hidden_row = 0;  // row of the target's hidden states that produced seq->tokens.back()
  int num_tokens = 0;  // drafts wanted (1..K)
};

// Where drafts come from. The product's source is the MTP assistant (MtpDraftSource); the engine
// tests script one to exercise verification at chosen acceptance rates.
class DraftSource {
 public:
  virtual ~DraftSource() = default;
  virtual int num_speculative_tokens() const = 0;
  // Appends up to each request's num_tokens drafts to seq->drafts. target_hidden: the target's
  // hidden states of the step just collected (ModelRunner::last_hidden()).
  virtual void propose(const std::vector<DraftRequest>& reqs, const Tensor& target_hidden, KvCache& target_cache) = 0;
};

// A round of draft steps runs on the device from start to end: each step's greedy token is the next
// step's input without a host round trip (Gemma4Drafter::greedy_step), and the round's ids come back
// in one copy. On backends that record CUDA graphs a round is recorded once per shape (padded
// sequences, context bucket, steps) and replayed (graph_step_inputs.h).
class MtpDraftSource : public DraftSource {
 public:
  // target_cache: the cache the drafts read (its groups shape the recorded inputs); max_kv_len: the
  // longest context drafted over (the model length); use_graphs: record rounds where the backend can
  // (off under --enforce-eager).
  MtpDraftSource(std::shared_ptr<Gemma4Drafter> drafter, int num_speculative_tokens, int max_seqs, int page_size,
                 const KvCache& target_cache, int max_kv_len, bool use_graphs);
  ~MtpDraftSource() override;

  int num_speculative_tokens() const override { return k_; }
  void propose(const std::vector<DraftRequest>& reqs, const Tensor& target_hidden, KvCache& target_cache) override;
  int num_graphs() const { return int(graphs_.size()); }

 private:
  // Enqueues `steps` draft steps of `seqs` rows from ids0 and seeds; step k's ids go to
  // draft_ids_[k * seqs, (k + 1) * seqs).
  void enqueue_round(const Tensor& ids0, int seqs, const AttentionBatch& batch, int steps, KvCache& target_cache);

  std::shared_ptr<Gemma4Drafter> drafter_;
  Backend& be_;
  int k_, max_seqs_, page_size_;
  Tensor rows_, ids_, seeds_;  // i32 [max_seqs], i32 [max_seqs], [max_seqs, Ht]
  Tensor draft_ids_;           // i32 [K * max_seqs]: a round's draft tokens, step-major
  std::unique_ptr<GraphStepInputs> inputs_;  // null: rounds run eagerly
  std::map<std::pair<GraphStepShape, int>, int> graphs_;  // (shape, steps) -> graph handle
};

}  // namespace gs
