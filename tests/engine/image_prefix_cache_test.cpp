// The prefix cache over image prompts: pages of soft tokens are keyed by the content hash of their
// image (set_image_keys), so a repeated image hits, a different image behind the same token ids
// does not, and a hit never ends inside an image.
#include <gtest/gtest.h>

#include "engine/kv_manager.h"

namespace gs {
namespace {

constexpr int F = int(KvGroup::Full);
constexpr int kImageId = 9000;

PreparedImagePtr image(uint64_t hash, int soft_tokens) {
  auto p = std::make_shared<PreparedImage>();
  p->soft_tokens = soft_tokens;
  p->content_hash = hash;
  return p;
}

// text(4) boi image(n) eoi text(tail): ids and block ids as the request path makes them.
struct Prompt {
  std::vector<int> ids, mm_block;
  std::vector<PreparedImagePtr> images;
};
Prompt prompt_with_image(PreparedImagePtr img, int tail = 6) {
  Prompt p;
  for (int i = 0; i < 4; ++i) p.ids.push_back(10 + i), p.mm_block.push_back(-1);
  p.ids.push_back(1), p.mm_block.push_back(-1);
  for (int i = 0; i < img->soft_tokens; ++i) p.ids.push_back(kImageId), p.mm_block.push_back(0);
  p.ids.push_back(2), p.mm_block.push_back(-1);
  for (int i = 0; i < tail; ++i) p.ids.push_back(20 + i), p.mm_block.push_back(-1);
  p.images = {std::move(img)};
  return p;
}

class ImagePrefixCacheTest : public ::testing::Test {
 protected:
  static constexpr int P = 4, W = 64;
  int pages[2] = {64, 64};
  KvManager kv{P, W, pages, true};
  std::vector<SeqPages> held;

  // Runs a prompt to the end of its prefill and indexes its pages, as the scheduler does.
  void run(const Prompt& p) {
    SeqPages s;
    set_image_keys(s, p.mm_block, p.images, P);
    ASSERT_TRUE(s.cacheable);
    ASSERT_TRUE(kv.allocate(s, 0, int(p.ids.size())));
    kv.index_computed_pages(s, p.ids.data(), int(p.ids.size()));
    held.push_back(std::move(s));
  }
  int hit(const Prompt& p) {
    SeqPages s;
    set_image_keys(s, p.mm_block, p.images, P);
    int n = kv.apply_prefix_hit(s, p.ids.data(), int(p.ids.size()));
    held.push_back(std::move(s));
    return n;
  }
  void TearDown() override {
    for (auto& s : held) kv.free(s);
    kv.check_invariants();
  }
};

TEST_F(ImagePrefixCacheTest, TheSameImageHitsAndAnotherImageDoesNot) {
  // 4 + 1 + 8 + 1 + 6 = 20 tokens: the image's soft tokens are positions 5..12 (pages 1..3).
  run(prompt_with_image(image(0xabc, 8)));
  EXPECT_EQ(hit(prompt_with_image(image(0xabc, 8))), 16);  // all but the last page: one token left to compute
  // Same ids, other pixels: only the text page before the image is shared.
  EXPECT_EQ(hit(prompt_with_image(image(0xdef, 8))), 4);
}

TEST_F(ImagePrefixCacheTest, TextOnlyPagesHashAsBefore) {
  Prompt text;
  for (int i = 0; i < 12; ++i) text.ids.push_back(50 + i);
  SeqPages s;
  set_image_keys(s, text.mm_block, text.images, P);
  EXPECT_TRUE(s.image_keys.empty());
  EXPECT_TRUE(s.cacheable);
  run(text);
  EXPECT_EQ(hit(text), 8);
}

TEST_F(ImagePrefixCacheTest, AHitNeverEndsInsideAnImage) {
  // Soft tokens 5..12; the second prompt diverges right after the image (other tail), so the
  // cached pages cover 0..11 at most and page 2 (8..11) ends inside the image at 11 -> 12: the hit
  // is cut back to the last page that ends outside it (page 0, 0..3; page 1 ends at 7, inside).
  Prompt a = prompt_with_image(image(0x77, 8));
  run(a);
  Prompt b = a;
  b.ids[13] = 99;  // eoi replaced: diverges at position 13 (page 3)
  EXPECT_EQ(hit(b), 4);
  SeqPages s;
  set_image_keys(s, a.mm_block, a.images, P);
  EXPECT_EQ(s.ends_inside_image, (std::vector<bool>{false, true, true, false, false}));
}

TEST_F(ImagePrefixCacheTest, ImageBlocksWithoutAnImageAreNotCacheable) {
  Prompt p = prompt_with_image(image(0x1, 8));
  p.images.clear();  // block ids with nothing to key them by (e.g. a caller that only sets mm_block)
  SeqPages s;
  set_image_keys(s, p.mm_block, p.images, P);
  EXPECT_FALSE(s.cacheable);
}

TEST_F(ImagePrefixCacheTest, KeysNameEveryImageOfAPageInOrder) {
  // Two 2-token images in one page: swapping them changes the key.
  std::vector<int> mm = {-1, 0, 0, 1, 1, -1, -1, -1};
  auto a = image(0x10, 2), b = image(0x20, 2);
  SeqPages s1, s2;
  set_image_keys(s1, mm, {a, b}, 8);
  set_image_keys(s2, mm, {b, a}, 8);
  ASSERT_EQ(s1.image_keys.size(), 1u);
  EXPECT_NE(s1.image_keys[0], 0u);
  EXPECT_NE(s1.image_keys[0], s2.image_keys[0]);
}

}  // namespace
}  // namespace gs
