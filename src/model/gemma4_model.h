// The Gemma-4 text decoder, written once against the op interface (ops/backend.h).
// One call of forward() runs every layer over a ragged batch (prefill chunks, decode tokens and
// verify tokens mixed), writes new K/V into the paged cache and returns logits for the requested
// rows.
#pragma once
#include <memory>
#include <vector>

#include "model/model_config.h"
#include "model/vision_tower.h"
#include "model/weights.h"
#include "ops/backend.h"
#include "model/rank_group.h"
#include "parallel/communicator.h"
#include "vision/prepared_image.h"

namespace gs {

struct ForwardOutput {
  Tensor logits;   // f32 [R, V], after final soft-cap; a view into the model's workspace
  Tensor hidden;   // [R, H] final-normed hidden state of the same rows (MTP drafter input)
};

// The images whose soft tokens a step prefills (an image is never split across steps): image i's
// soft tokens are rows [first_row[i], first_row[i] + images[i]->soft_tokens) of the step.
struct StepImages {
  std::vector<const PreparedImage*> images;
  std::vector<int> first_row;
  bool empty() const { return images.empty(); }
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
  // logits rows (and, with a vision tower, the tower's for the images of such a step). Called once
  // at start-up; forward() never allocates after it.
  void reserve(int max_tokens, int max_logit_rows);
  size_t workspace_bytes() const;         // the text model's and the tower's
  size_t vision_workspace_bytes() const;  // the tower's share
  // Patches one tower pass takes at most when the model reserves for max_tokens rows per step.
  static int vision_patches_for(int max_tokens);

  // The vision tower, when the weights have one (multimodal enabled), else null.
  VisionTower* vision_tower() { return tower_.get(); }
  // The id the embedding (and PLE) lookup uses for `token`: image placeholders embed as the pad id,
  // then get their soft tokens (§4.4), as the reference's multimodal model does.
  int embedding_id(int token) const {
    return tower_ && token == cfg_.image_token_id ? cfg_.pad_token_id : token;
  }

  // ids: i32 [T] on the device (placeholders already mapped by embedding_id); logit_rows: i32 [R]
  // rows of the batch whose logits are wanted; images: the images whose soft tokens are rows of this
  // step, run through the tower together and written over their rows' embeddings.
  ForwardOutput forward(const Tensor& ids, const AttentionBatch& batch, KvCache& cache, const Tensor& logit_rows,
                        const StepImages* images = nullptr);

 private:
  struct Workspace;
  void merge_images(const StepImages& images, const Tensor& x, int T);
  ModelConfig cfg_;
  ModelWeights w_;
  Backend& be_;
  Communicator* tp_ = nullptr;  // null on one device
  RankGroup* group_ = nullptr;
  std::shared_ptr<Workspace> ws_;
  std::unique_ptr<VisionTower> tower_;
};

}  // namespace gs
