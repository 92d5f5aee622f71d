// The Gemma-4 vision tower and its projection into the text model (gemma4-architecture.md §4.2),
// written once against the op interface like the text model. One encode() runs every image of a
// step together: their patches are packed rows (image i's patches are rows [cu[i], cu[i+1]), no
// padding rows), attention stays inside each image, and the pooler maps each image's 3×3 patch
// cells to its soft tokens. The result is the soft-token embeddings the prompt's placeholder rows
// get (no sqrt(H) scale).
#pragma once
#include <memory>
#include <vector>

#include "model/model_config.h"
#include "model/vision_weights.h"
#include "ops/backend.h"
#include "vision/prepared_image.h"

namespace gs {

class VisionTower {
 public:
  VisionTower(const ModelConfig& cfg, std::shared_ptr<const VisionWeights> weights, Backend& backend);

  // Sizes the workspace: up to max_patches patches per tower pass (images are split into passes
  // that fit; one image never is) and max_soft_tokens soft tokens per encode() call. Once, at
  // start-up; encode() never allocates after it.
  void reserve(int max_patches, int max_soft_tokens);
  size_t workspace_bytes() const;
  // The workspace reserve() would take, for the memory plan.
  static size_t workspace_bytes_for(const ModelConfig& cfg, DType act, int max_patches, int max_soft_tokens);
  int max_patches() const { return max_patches_; }

  // Soft-token embeddings [Σ soft_tokens, H] of the images, in order: a view into the workspace,
  // valid until the next call. Throws gs::Error naming the image for one the tower cannot take.
  Tensor encode(const std::vector<const PreparedImage*>& images);
  // The last encode()'s tower output before the projection, [Σ soft_tokens, Hv] (pooled, scaled,
  // standardized): what the reference calls the vision tower's last hidden state.
  Tensor last_tower_output() const { return last_pooled_; }

 private:
  struct Workspace;
  // Runs the tower on images [first, last) into rows [row0, ...) of the pooled buffer.
  void encode_pass(const std::vector<const PreparedImage*>& images, size_t first, size_t last, int row0);
  void linear(const VisionLinear& l, const Tensor& x, const Tensor& out);

  VisionConfig vc_;
  int64_t text_hidden_ = 0;
  std::shared_ptr<const VisionWeights> w_;
  Backend& be_;
  std::shared_ptr<Workspace> ws_;
  int max_patches_ = 0, max_soft_ = 0;
  Tensor last_pooled_;
};

}  // namespace gs
