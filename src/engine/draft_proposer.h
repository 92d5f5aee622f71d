// The drafting half of speculative decoding in the engine: after a step's results are applied,
// every sequence that sampled and may speculate gets up to K draft tokens from the MTP assistant
// (model/gemma4_drafter.h), seeded with its newest token and the target's final-normed hidden
// state of the row that produced it; its next step verifies them (engine/speculative_verify.h).
// The drafts of all such sequences run as one batch per draft step, over the target's KV cache.
#pragma once
#include <memory>
#include <vector>

#include "engine/sequence.h"
#include "model/gemma4_drafter.h"
#include "ops/kv_cache.h"

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

class MtpDraftSource : public DraftSource {
 public:
  MtpDraftSource(std::shared_ptr<Gemma4Drafter> drafter, int num_speculative_tokens, int max_seqs, int page_size);

  int num_speculative_tokens() const override { return k_; }
  void propose(const std::vector<DraftRequest>& reqs, const Tensor& target_hidden, KvCache& target_cache) override;

 private:
  std::shared_ptr<Gemma4Drafter> drafter_;
  Backend& be_;
  int k_, max_seqs_, page_size_;
  Tensor rows_, ids_, seeds_;  // i32 [max_seqs], i32 [max_seqs], [max_seqs, Ht]
};

}  // namespace gs
