#include "engine/speculative_verify.h"

#include "core/error.h"

namespace gs {

DraftVerdict verify_drafts(const std::vector<int>& drafts, const std::vector<int>& sampled) {
  return verify_drafts_forced(drafts, sampled, std::vector<bool>(drafts.size(), false));
}

DraftVerdict verify_drafts_forced(const std::vector<int>& drafts, const std::vector<int>& sampled,
                                  const std::vector<bool>& forced) {
  GS_CHECK(forced.size() == drafts.size(), "speculative verify: {} forced flags for {} drafts", forced.size(),
           drafts.size());
  GS_CHECK(sampled.size() == drafts.size() + 1, "speculative verify: {} target samples for {} drafts (need K+1)",
           sampled.size(), drafts.size());
  DraftVerdict v;
  while (v.accepted < int(drafts.size()) &&
         (sampled[size_t(v.accepted)] == drafts[size_t(v.accepted)] || forced[size_t(v.accepted)])) {
    v.tokens.push_back(drafts[size_t(v.accepted)]);
    ++v.accepted;
  }
  v.tokens.push_back(sampled[size_t(v.accepted)]);  // the correction, or the bonus after all K
  return v;
}

}  // namespace gs
