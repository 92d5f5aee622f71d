#include "engine/speculative_verify.h"

#include "core/error.h"

namespace gs {

DraftVerdict verify_drafts(const std::vector<int>& drafts, const std::vector<int>& sampled) {
  GS_CHECK(sampled.size() == drafts.size() + 1, "speculative verify: {} target samples for {} drafts (need K+1)",
           sampled.size(), drafts.size());
  DraftVerdict v;
  while (v.accepted < int(drafts.size()) && sampled[size_t(v.accepted)] == drafts[size_t(v.accepted)]) {
    v.tokens.push_back(drafts[size_t(v.accepted)]);
    ++v.accepted;
  }
  v.tokens.push_back(sampled[size_t(v.accepted)]);  // the correction, or the bonus after all K
  return v;
}

}  // namespace gs
