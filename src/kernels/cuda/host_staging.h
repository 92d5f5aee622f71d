// Asynchronous uploads of small host arrays (sampling rows, penalty entries) without a host
// synchronisation: the bytes go into a pinned buffer and a cudaMemcpyAsync on the stream moves
// them into a device buffer that kernels enqueued afterwards read.
//
// A ring of slots: a slot's pinned buffer is rewritten only after the copy that last read it has
// run (an event per slot), so with several slots in flight the host almost never waits.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <memory>
#include <vector>

#include "kernels/cuda/device_allocator.h"

namespace gs::cuda {

class HostStaging {
 public:
  HostStaging(std::shared_ptr<DeviceAllocator> alloc, cudaStream_t stream, int slots = 8);
  ~HostStaging();
  HostStaging(const HostStaging&) = delete;
  HostStaging& operator=(const HostStaging&) = delete;

  // Copies `bytes` from `src` to a device buffer (valid for work enqueued on the stream before the
  // ring wraps around) and returns it.
  void* upload(const void* src, size_t bytes);

 private:
  struct Slot {
    void* pinned = nullptr;
    std::shared_ptr<void> device;
    size_t capacity = 0;
    cudaEvent_t done = nullptr;
    bool used = false;
  };
  // Every slot starts this large: cudaMallocHost/cudaFreeHost wait for every device, so growing
  // mid-step under tensor parallelism can stall behind a peer's all-reduce (device_allocator.h);
  // uploads are a step's sampling rows and penalty entries, far below it.
  static constexpr size_t kInitialBytes = size_t(256) << 10;
  void grow(Slot& s, size_t bytes);

  std::shared_ptr<DeviceAllocator> alloc_;
  cudaStream_t stream_;
  std::vector<Slot> slots_;
  size_t next_ = 0;
};

}  // namespace gs::cuda
