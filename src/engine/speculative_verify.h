// Verification of a speculative round: the target scores the sequence's newest token and K draft
// tokens in one step (K+1 rows), every row is sampled as an ordinary decode row would be (its own
// (seed, step), after the same logit processing), and the drafts are accepted while each equals the
// target's sample at the row before it; the first mismatch emits the target's sample instead, and
// a round whose drafts are all accepted emits the last row's sample as a bonus.
//
// Why this is exact: the drafter is greedy, so its proposal is a point mass q = δ(d). Rejection
// sampling accepts d with probability min(1, p(d)/q(d)) = p(d) and otherwise draws from the
// residual (p - q)+ normalised, which is p restricted to tokens other than d. Drawing x ~ p and
// accepting when x = d gives the same: acceptance with probability p(d), and on rejection x ~ p
// conditioned on x != d. So every emitted token is distributed exactly as the target's own sample,
// and with the same (seed, step) per token index a seeded request emits the same tokens with and
// without speculation wherever the logits agree (greedy: the argmax chain).
#pragma once
#include <vector>

namespace gs {

struct DraftVerdict {
  int accepted = 0;         // drafts accepted (0..K)
  std::vector<int> tokens;  // the emitted tokens: the accepted drafts, then one of the target's
};

// drafts: d_1..d_K; sampled: the target's sample at each of the K+1 verify rows (row i scores the
// token after d_i, row 0 the token after the newest committed one). Throws gs::Error on a size mismatch.
DraftVerdict verify_drafts(const std::vector<int>& drafts, const std::vector<int>& sampled);

// Benchmarks only (--speculative-accept-rate, dummy weights): draft i also passes when forced[i],
// so the serving loop can be timed at a chosen acceptance length; its outputs are meaningless.
DraftVerdict verify_drafts_forced(const std::vector<int>& drafts, const std::vector<int>& sampled,
                                  const std::vector<bool>& forced);

}  // namespace gs
