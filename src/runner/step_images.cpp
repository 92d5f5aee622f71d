#include "runner/step_images.h"

#include "core/error.h"

namespace gs {

void collect_step_images(const SequenceStep& s, int row0, StepImages& out) {
  if (!s.mm_block) return;
  for (int r = 0; r < s.q_len;) {
    const int b = s.mm_block_of_row(r);
    if (b < 0) {
      ++r;
      continue;
    }
    int end = r;
    while (end < s.q_len && s.mm_block_of_row(end) == b) ++end;
    GS_CHECK(s.images && b < int(s.images->size()) && (*s.images)[size_t(b)],
             "runner: vision block {} at position {} has no image ({} images given)", b, s.start + r,
             s.images ? s.images->size() : 0);
    const PreparedImage* im = (*s.images)[size_t(b)].get();
    GS_CHECK(end - r == im->soft_tokens,
             "runner: the chunk [{}, {}) holds {} of image {}'s {} soft tokens (an image is prefilled whole)", s.start,
             s.end(), end - r, b, im->soft_tokens);
    out.images.push_back(im);
    out.first_row.push_back(row0 + r);
    r = end;
  }
}

}  // namespace gs
