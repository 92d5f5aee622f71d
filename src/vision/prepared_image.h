// One image made ready for the vision tower: decoded, resized to multiples of 48 within the
// soft-token budget, patchified. Produced by the request path (image decoding and preprocessing),
// consumed by the vision tower when the image's soft tokens are prefilled. Immutable once made,
// shared between the request and the engine.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

namespace gs {

struct PreparedImage {
  static constexpr int kPatch = 16;             // pixels per patch side
  static constexpr int kPool = 3;               // patches per soft-token side (3x3 pooling)
  static constexpr int kPatchValues = kPatch * kPatch * 3;  // 768: (pixel row, pixel col, channel)

  int height = 0, width = 0;   // resized pixels, multiples of 48
  int budget = 0;              // soft-token budget it was resized for (70, 140, 280, 560, 1120)
  int soft_tokens = 0;         // (height/16)*(width/16)/9 <= budget
  // Real patches only, row-major (patch row outer, patch column inner); the reference pads to
  // budget*9 patches with zero pixels at position (-1,-1), which the tower masks and the pooler
  // drops, so padding is never materialised here.
  int num_patches() const { return (height / kPatch) * (width / kPatch); }
  std::vector<float> pixels;   // [num_patches, 768], rescaled to [0,1]
  std::vector<int32_t> pos_x;  // [num_patches] patch column
  std::vector<int32_t> pos_y;  // [num_patches] patch row
  uint64_t content_hash = 0;   // of the budget and the resized pixels: the prefix cache's key
};

using PreparedImagePtr = std::shared_ptr<const PreparedImage>;

}  // namespace gs
