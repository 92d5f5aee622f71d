#include "runner/prompt_images.h"

#include <algorithm>

#include "core/error.h"

namespace gs {

PromptImages expand_image_placeholders(const std::vector<int>& tokens, const ImagePromptTokens& ids,
                                       std::vector<PreparedImagePtr> images) {
  PromptImages p;
  size_t next = 0;
  for (int t : tokens) {
    if (t != ids.placeholder) {
      p.tokens.push_back(t);
      p.mm_block.push_back(-1);
      continue;
    }
    GS_CHECK(next < images.size(), "the prompt has more image tokens ({}) than images ({})",
             std::count(tokens.begin(), tokens.end(), ids.placeholder), images.size());
    GS_CHECK(images[next], "image {} is missing", next);
    p.tokens.push_back(ids.boi);
    p.mm_block.push_back(-1);
    p.tokens.insert(p.tokens.end(), size_t(images[next]->soft_tokens), ids.placeholder);
    p.mm_block.insert(p.mm_block.end(), size_t(images[next]->soft_tokens), int(next));
    p.tokens.push_back(ids.eoi);
    p.mm_block.push_back(-1);
    ++next;
  }
  GS_CHECK(next == images.size(), "{} images given, but the prompt has {} image tokens (id {})", images.size(), next,
           ids.placeholder);
  p.images = std::move(images);
  return p;
}

PromptImages expand_image_placeholders(const std::vector<int>& tokens, const ModelConfig& cfg,
                                       std::vector<PreparedImagePtr> images) {
  return expand_image_placeholders(tokens, ImagePromptTokens{cfg.image_token_id, cfg.boi_token_id, cfg.eoi_token_id},
                                   std::move(images));
}

std::vector<int> chunk_ends(int n, int chunk, const std::vector<int>& mm_block) {
  GS_CHECK(chunk > 0, "chunk size must be positive, got {}", chunk);
  auto block = [&](int p) { return p >= 0 && p < int(mm_block.size()) ? mm_block[size_t(p)] : -1; };
  std::vector<int> ends;
  for (int start = 0; start < n;) {
    int end = std::min(n, start + chunk);
    const int b = block(end);
    if (end < n && b >= 0 && block(end - 1) == b) {
      while (end > start && block(end - 1) == b) --end;  // end before the block...
      if (end == start)                                  // ...unless it starts here: take it whole
        while (end < n && block(end) == b) ++end;
    }
    ends.push_back(end);
    start = end;
  }
  return ends;
}

}  // namespace gs
