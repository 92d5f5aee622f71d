// prepare_image: the target-size rule (architecture notes 4.1), budgets, the patch layout, the
// resize on simple inputs, and the content hash the prefix cache keys images by.
#include <gtest/gtest.h>

#include "core/error.h"
#include "vision/image_preprocess.h"

namespace gs {
namespace {

RgbImage solid(int w, int h, uint8_t r, uint8_t g, uint8_t b) {
  RgbImage img;
  img.width = w;
  img.height = h;
  for (int i = 0; i < w * h; ++i) img.pixels.insert(img.pixels.end(), {r, g, b});
  return img;
}

TEST(ImagePreprocess, TargetSizeRule) {
  auto size = [](int h, int w, int b) {
    ImageSize s = image_target_size(h, w, b);
    return std::make_pair(s.height, s.width);
  };
  EXPECT_EQ(size(1000, 1000, 280), std::make_pair(768, 768));   // 256 soft tokens
  EXPECT_EQ(size(256, 256, 70), std::make_pair(384, 384));
  EXPECT_EQ(size(180, 320, 70), std::make_pair(288, 528));
  EXPECT_EQ(size(100, 800, 70), std::make_pair(96, 1104));
  EXPECT_EQ(size(20, 30, 1120), std::make_pair(1296, 1920));
  // One side rounds to 0: it becomes 48, the other floor(long/short)*48 capped at budget*48.
  EXPECT_EQ(size(10, 5000, 70), std::make_pair(48, 3360));
  EXPECT_EQ(size(5000, 10, 280), std::make_pair(13440, 48));
  for (int b : kImageBudgets) {
    for (auto [h, w] : {std::pair{333, 777}, std::pair{1080, 1920}, std::pair{4000, 3000}, std::pair{17, 9}}) {
      ImageSize s = image_target_size(h, w, b);
      EXPECT_EQ(s.height % 48, 0);
      EXPECT_EQ(s.width % 48, 0);
      EXPECT_LE((s.height / 16) * (s.width / 16) / 9, b);
    }
  }
}

TEST(ImagePreprocess, RefusesOtherBudgets) {
  EXPECT_THROW(prepare_image(solid(10, 10, 0, 0, 0), 100), Error);
  EXPECT_FALSE(is_image_budget(0));
  EXPECT_TRUE(is_image_budget(280));
}

TEST(ImagePreprocess, SolidColourStaysSolidAndPatchesAreRowMajor) {
  PreparedImage p = prepare_image(solid(64, 48, 255, 128, 0), 70);
  ASSERT_EQ(p.height % 48, 0);
  EXPECT_EQ(p.soft_tokens, (p.height / 16) * (p.width / 16) / 9);
  EXPECT_EQ(int(p.pixels.size()), p.num_patches() * 768);
  for (int i = 0; i < p.num_patches(); ++i) {
    ASSERT_FLOAT_EQ(p.pixels[size_t(i) * 768 + 0], 1.0f);
    ASSERT_FLOAT_EQ(p.pixels[size_t(i) * 768 + 1], 128.0f / 255);
    ASSERT_FLOAT_EQ(p.pixels[size_t(i) * 768 + 2], 0.0f);
  }
  const int gw = p.width / 16;
  EXPECT_EQ(p.pos_x[1], 1);
  EXPECT_EQ(p.pos_y[1], 0);
  EXPECT_EQ(p.pos_x[gw], 0);
  EXPECT_EQ(p.pos_y[gw], 1);
}

TEST(ImagePreprocess, NoResizeWhenTheSizeAlreadyFits) {
  // 48x48 at budget 70: target 384x384 upscales. 384x384 stays as it is: pixels copied exactly.
  RgbImage img = solid(384, 384, 0, 0, 0);
  for (size_t i = 0; i < img.pixels.size(); ++i) img.pixels[i] = uint8_t(i * 7);
  PreparedImage p = prepare_image(img, 70);
  ASSERT_EQ(p.width, 384);
  // Patch 1 starts at pixel column 16 of row 0.
  EXPECT_FLOAT_EQ(p.pixels[768], float(uint8_t(16 * 3 * 7)) * float(1.0 / 255.0));
}

TEST(ImagePreprocess, ContentHashTellsImagesApart) {
  RgbImage a = solid(100, 80, 10, 20, 30), b = a;
  b.pixels[5000] ^= 0x40;
  PreparedImage pa = prepare_image(a, 70), pa2 = prepare_image(a, 70), pb = prepare_image(b, 70);
  EXPECT_EQ(pa.content_hash, pa2.content_hash);
  EXPECT_NE(pa.content_hash, pb.content_hash);
  EXPECT_NE(pa.content_hash, prepare_image(a, 140).content_hash);
}

}  // namespace
}  // namespace gs
