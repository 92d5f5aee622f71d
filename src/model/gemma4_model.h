// The Gemma-4 text decoder, written once against the op interface (ops/backend.h).
// One call of forward() runs every layer over a ragged batch (prefill chunks, decode tokens and
// verify tokens mixed), writes new K/V into the paged cache and returns logits for the requested
// rows.
#pragma once
#include "model/model_config.h"
#include "model/weights.h"
#include "ops/backend.h"
#include "model/rank_group.h"
#include "parallel/communicator.h"

namespace gs {

struct ForwardOutput {
  Tensor logits;   // f32 [R, V], after final soft-cap; a view into the model's workspace
  Tensor hidden;   // [R, H] final-normed hidden state of the same rows (MTP drafter input)
};

class Gemma4Model {
 public:
  // With a communicator of size N > 1 the model is one rank of a tensor-parallel group: cfg is
  // shard_config(full, N) and weights that rank's shard (model/tensor_parallel.h). The
  // communicator outlives the model.
  Gemma4Model(ModelConfig cfg, ModelWeights weights, Backend& backend, Communicator* tp = nullptr);

  const ModelConfig& config() const { return cfg_; }
  const ModelWeights& weights() const { return w_; }
  Backend& backend() { return be_; }
  Communicator* tensor_parallel() const { return tp_; }
  // Rank 0 of a tensor-parallel model knows its group, so that the engine's runner, handed rank 0,
  // runs every step on every rank (runner/model_runner.h); null otherwise.
  RankGroup* rank_group() const { return group_; }
  void set_rank_group(RankGroup* group) { group_ = group; }

  // Sizes the activation workspace for up to max_tokens rows per step and max_logit_rows
  // logits rows. Called once at start-up; forward() never allocates after it.
  void reserve(int max_tokens, int max_logit_rows);
  size_t workspace_bytes() const;

  // ids: i32 [T] on the device; logit_rows: i32 [R] rows of the batch whose logits are wanted.
  ForwardOutput forward(const Tensor& ids, const AttentionBatch& batch, KvCache& cache, const Tensor& logit_rows);

 private:
  struct Workspace;
  ModelConfig cfg_;
  ModelWeights w_;
  Backend& be_;
  Communicator* tp_ = nullptr;  // null on one device
  RankGroup* group_ = nullptr;
  std::shared_ptr<Workspace> ws_;
};

}  // namespace gs
