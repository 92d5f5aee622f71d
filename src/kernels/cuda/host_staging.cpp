#include "kernels/cuda/host_staging.h"

#include <cstring>

#include "kernels/cuda/cuda_check.h"

namespace gs::cuda {

HostStaging::HostStaging(std::shared_ptr<DeviceAllocator> alloc, cudaStream_t stream, int slots)
    : alloc_(std::move(alloc)), stream_(stream), slots_(size_t(slots)) {
  for (auto& s : slots_) {
    GS_CUDA_CHECK(cudaEventCreateWithFlags(&s.done, cudaEventDisableTiming));
    grow(s, kInitialBytes);
  }
}

void HostStaging::grow(Slot& s, size_t bytes) {
  if (s.pinned) GS_CUDA_CHECK(cudaFreeHost(s.pinned));
  s.pinned = nullptr;
  GS_CUDA_CHECK(cudaMallocHost(&s.pinned, bytes));
  s.device = alloc_->allocate(bytes);
  s.capacity = bytes;
}

HostStaging::~HostStaging() {
  for (auto& s : slots_) {
    if (s.done) {
      cudaEventSynchronize(s.done);
      cudaEventDestroy(s.done);
    }
    if (s.pinned) cudaFreeHost(s.pinned);
  }
}

void* HostStaging::upload(const void* src, size_t bytes) {
  Slot& s = slots_[next_];
  next_ = (next_ + 1) % slots_.size();
  if (s.used) GS_CUDA_CHECK(cudaEventSynchronize(s.done));  // the last copy out of this slot has run
  if (bytes > s.capacity) grow(s, bytes);
  if (bytes) {
    std::memcpy(s.pinned, src, bytes);
    GS_CUDA_CHECK(cudaMemcpyAsync(s.device.get(), s.pinned, bytes, cudaMemcpyHostToDevice, stream_));
  }
  GS_CUDA_CHECK(cudaEventRecord(s.done, stream_));
  s.used = true;
  return s.device.get();
}

}  // namespace gs::cuda
