#include "kernels/cuda/l2_prefetch.h"

#include <algorithm>

#include "kernels/cuda/device_math.cuh"
#include "kernels/cuda/launch_util.h"

namespace gs::cuda {
namespace {

constexpr int64_t kChunkBytes = 32 << 10;  // one prefetch instruction per chunk
constexpr int kThreads = 128;

__global__ void __launch_bounds__(kThreads) l2_prefetch_kernel(const PrefetchRanges r) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  int64_t chunk = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  int64_t first = 0;  // chunks of the ranges before range i
  for (int i = 0; i < r.count; ++i) {
    const int64_t n = (r.bytes[i] + kChunkBytes - 1) / kChunkBytes;
    for (; chunk < first + n; chunk += stride) {
      const int64_t off = (chunk - first) * kChunkBytes;
      const uint32_t bytes = uint32_t(min(kChunkBytes, r.bytes[i] - off) & ~int64_t(15));
      if (bytes)
        asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(static_cast<const char*>(r.ptr[i]) + off),
                     "r"(bytes)
                     : "memory");
    }
    first += n;
  }
#endif
  pdl_enter();
}

}  // namespace

void launch_l2_prefetch(const PrefetchRanges& ranges, cudaStream_t stream) {
  int64_t chunks = 0;
  for (int i = 0; i < ranges.count; ++i) {
    require(aligned16(ranges.ptr[i]) && ranges.bytes[i] >= 0, "l2_prefetch: range ", i, " is not 16-byte aligned");
    chunks += (ranges.bytes[i] + kChunkBytes - 1) / kChunkBytes;
  }
  if (chunks == 0) return;
  const int blocks = int(std::min<int64_t>((chunks + kThreads - 1) / kThreads, 16));
  launch_pdl("l2_prefetch_kernel", l2_prefetch_kernel, dim3(blocks), dim3(kThreads), 0, stream, ranges);
}

}  // namespace gs::cuda
