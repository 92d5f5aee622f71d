// Weight prefetch into L2 ahead of use (Backend::prefetch_weights). A batch-1 decode step alternates
// bandwidth-bound GEMVs with latency-bound kernels (qkv_prepare, attention, combine, norms) during
// which HBM idles; a prefetch issued just before them lets HBM stream the next GEMVs' weights into
// L2 meanwhile, so those GEMVs read (part of) their weights from L2.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace gs::cuda {

constexpr int kMaxPrefetchRanges = 8;

struct PrefetchRanges {
  const void* ptr[kMaxPrefetchRanges];  // 16-byte aligned
  int64_t bytes[kMaxPrefetchRanges];
  int count;
};

// A PDL launch whose threads issue cp.async.bulk.prefetch.L2 over the ranges before their wait (the
// weights never change), then wait and let the next kernel in: the prefetches run on in the
// background. sm_90 only (a no-op kernel elsewhere).
void launch_l2_prefetch(const PrefetchRanges& ranges, cudaStream_t stream);

}  // namespace gs::cuda
