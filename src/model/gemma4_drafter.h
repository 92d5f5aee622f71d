// The Gemma-4 MTP assistant ("drafter", gemma4-architecture.md §5), written against the op
// interface like Gemma4Model. One step() drafts one token for each row of a batch: from the
// sequence's newest token (embedded with the target's table) and a backbone-width state (the
// target's final-normed hidden state for the first step, the drafter's own post_projection output
// after that), its Q-only layers attend to the target's KV cache, and the head scores the
// vocabulary. Nothing is written to any cache, so every step of a round runs at the same position.
//
// By default the convention is transformers' (SinglePositionMultiTokenCandidateGenerator, the
// parity reference; fixtures/draft_golden): with the target's cache holding positions 0..n-1, each
// draft step runs at position n, full layers see keys 0..n-1, and sliding layers see the last W+1
// of them (a flipped bidirectional window), which is the ordinary sliding rule with window W+2 at
// position n. DraftConvention::Vllm drafts at position n-1 with the ordinary window instead.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "model/gemma4_model.h"

namespace gs {

// Which position a round drafts at and which keys it sees (gemma4-architecture.md §5.2), with the
// target's cache holding positions 0..n-1 and the newest token at n:
//   Transformers  position n; sliding layers see the last W+1 keys (the parity reference)
//   Vllm          position n-1 with the ordinary window (vLLM's and SGLang's drafters)
enum class DraftConvention { Transformers, Vllm };
// "transformers" or "vllm"; anything else is a gs::Error naming the flag.
DraftConvention parse_draft_convention(const std::string& s);

struct DraftStepOutput {
  Tensor logits;       // f32 [R, V]; with the centroid head, tokens outside the chosen clusters hold
                       // the row's smallest chosen logit minus 1 (never the argmax)
  Tensor next_hidden;  // [R, Ht] post_projection of the drafter's final state: the next step's input
};

class Gemma4Drafter {
 public:
  // `cfg` is the assistant's config bound to the target's (ModelConfig::bind_assistant_to); the
  // target lends its input embedding table and its KV cache.
  Gemma4Drafter(ModelConfig cfg, ModelWeights weights, const Gemma4Model& target, Backend& backend,
                DraftConvention convention = DraftConvention::Transformers);

  const ModelConfig& config() const { return cfg_; }
  DraftConvention convention() const { return convention_; }
  // SequenceStep::position_shift of the draft rows: 0, or -1 under the vLLM convention.
  int position_shift() const { return convention_ == DraftConvention::Vllm ? -1 : 0; }
  Backend& backend() { return be_; }
  // Sizes the workspace for up to max_rows sequences drafted together; step() never allocates.
  void reserve(int max_rows);

  // ids: i32 [R] on the device, each sequence's newest token; hidden: [R, Ht]. `batch` has one
  // query-only row per sequence (SequenceStep with write_kv = false, start = the cached length
  // n, q_len 1) over the target's page tables; `target_cache` is the target's KV cache.
  DraftStepOutput step(const Tensor& ids, const Tensor& hidden, const AttentionBatch& batch, KvCache& target_cache);

  // step() without the host: the greedy draft token of each row goes to out_ids (i32 [R] on the
  // device, the next step's `ids`), chosen on the device; the centroid head scores only its chosen
  // clusters' tokens. Returns next_hidden. Nothing is copied or synchronised, so a round of steps can
  // be enqueued (or recorded in a CUDA graph) back to back.
  Tensor greedy_step(const Tensor& ids, const Tensor& hidden, const AttentionBatch& batch, KvCache& target_cache,
                     const Tensor& out_ids);

  // The greedy draft token of each row of step()'s logits (ties to the lowest id), chosen on the
  // backend (only the ids are copied back); synchronises.
  std::vector<int> argmax(const DraftStepOutput& out);

 private:
  struct Workspace;
  ModelConfig cfg_;
  DraftConvention convention_;
  ModelWeights w_;
  const Gemma4Model& target_;
  Backend& be_;
  std::shared_ptr<Workspace> ws_;

  // Embedding, pre_projection, the layers and the final norm; writes next_hidden, returns the normed
  // state the head reads.
  Tensor trunk(const Tensor& ids, const Tensor& hidden, const AttentionBatch& batch, KvCache& target_cache,
               Tensor& next_hidden);
  // The centroid head (use_ordered_embeddings): keeps the scores of the tokens of each row's
  // centroid_top_k best clusters and masks the rest.
  void mask_to_top_clusters(const Tensor& centroid_scores, const Tensor& logits);
};

}  // namespace gs
