// The arithmetic of Backend::adjust_logits that every backend must round identically (host code
// and CUDA device code alike), so cpu and cuda adjust a row to the same bits.
#pragma once
#include <cfloat>

#include "ops/backend.h"
#include "ops/sampling_rng.h"  // GS_HOST_DEVICE

namespace gs {

// The repetition penalty of one logit (vLLM, after the CTRL paper): a positive logit is divided by
// p, a non-positive one multiplied, so p > 1 always makes the token less likely. A quotient past
// the float range (p near 0) saturates instead of becoming +inf, which would turn the row's
// softmax into NaN.
GS_HOST_DEVICE float repetition_penalized(float logit, float p) {
#ifdef __CUDA_ARCH__
  // Explicit roundings: no fused multiply-add with the subtraction that may follow.
  return logit > 0.f ? fminf(__fdiv_rn(logit, p), FLT_MAX) : __fmul_rn(logit, p);
#else
  return logit > 0.f ? (logit / p < FLT_MAX ? logit / p : FLT_MAX) : logit * p;
#endif
}

// What presence and frequency penalties subtract from a token generated `count` > 0 times.
// Evaluated on the host by every backend (the cuda one ships the value), so it rounds once.
inline float penalty_delta(const LogitAdjustRow& row, int count) {
  return row.presence_penalty + row.frequency_penalty * float(count);
}

}  // namespace gs
