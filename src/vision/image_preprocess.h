// Decoded RGB to what the vision tower reads, as transformers' Gemma4ImageProcessor (the default,
// torchvision backend) does it: the aspect-preserving resize to multiples of 48 within the
// soft-token budget (bicubic with antialias, on the 8-bit image as torch resamples uint8 on the
// cpu), rescale by 1/255, patchify, 2-D patch positions.
// Golden fixtures: fixtures/image_golden (tools/reference/make_image_golden.py).
#pragma once
#include <array>

#include "vision/image_decode.h"
#include "vision/prepared_image.h"

namespace gs {

// The budgets the reference supports (max_soft_tokens).
inline constexpr std::array<int, 5> kImageBudgets = {70, 140, 280, 560, 1120};
bool is_image_budget(int budget);

struct ImageSize {
  int height = 0, width = 0;
};
// The reference's get_aspect_ratio_preserving_size for patch 16, pooling 3 (architecture notes
// section 4.1). Throws gs::Error for an image that cannot be resized within the budget.
ImageSize image_target_size(int height, int width, int budget);

// The separable, support-scaled bicubic resize (a = -0.5) with antialias that torch's
// _upsample_bicubic2d_aa computes for uint8 images (PIL's scheme): fixed-point weights, a width
// pass then a height pass, each rounded and clipped back to 8 bits. Not Pillow's own resize: its
// weights have other fraction bits, and differ from torchvision's by up to 2/255.
RgbImage resize_bicubic_antialias(const RgbImage& src, int height, int width);

// Throws gs::Error for a budget outside kImageBudgets.
PreparedImage prepare_image(const RgbImage& rgb, int budget);

}  // namespace gs
