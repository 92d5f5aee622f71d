// A simple caching allocator for device memory. Allocating costs tens of microseconds, so freed
// blocks are kept in size classes and handed out again. Blocks come from pool_malloc below, not
// cudaMalloc (why: there).
// All work runs on one stream, so a block freed by the host can be reused by later work on that
// stream without any event: stream order already puts the old reader before the new writer.
//
// Size classes: round up to 512 bytes below 1 MiB, to 2 MiB above (weights are exact-size big
// blocks and are never freed on the hot path). `release_cached()` returns the cache to the driver,
// which the backend does before reporting free memory and when cudaMalloc runs out.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace gs::cuda {

// Device memory on `device` without cudaMalloc/cudaFree's implicit synchronisation. Once peer
// access is enabled (the custom all-reduce), cudaMalloc maps every new block into each peer and
// cudaFree waits for the peers to go idle; under tensor parallelism a rank that allocates mid-step
// then waits for a peer device busy with an all-reduce that waits for this very rank, and the
// process hangs. Blocks here come from the device's stream-ordered pool (not mapped into peers),
// allocated on a private stream that is synchronised at once, so they are ready for any stream;
// allowed while the calling thread captures a CUDA graph. pool_malloc returns the CUDA error (the
// caller decides about out-of-memory); pool_free returns the block to the pool; pool_trim hands the
// pool's unused memory back to the driver (cudaMemGetInfo then counts it as free).
cudaError_t pool_malloc(int device, size_t bytes, void** p);
void pool_free(int device, void* p);
void pool_trim(int device);

class DeviceAllocator : public std::enable_shared_from_this<DeviceAllocator> {
 public:
  explicit DeviceAllocator(int device) : device_(device) {}
  ~DeviceAllocator();
  DeviceAllocator(const DeviceAllocator&) = delete;
  DeviceAllocator& operator=(const DeviceAllocator&) = delete;

  // A block of at least `bytes` (256-byte aligned). The shared_ptr returns it to the cache; it
  // keeps the allocator alive, so tensors may outlive the backend object.
  std::shared_ptr<void> allocate(size_t bytes);
  void release_cached();

  size_t bytes_in_use() const;
  size_t bytes_cached() const;

 private:
  static size_t round_size(size_t bytes);
  void give_back(void* p, size_t size);

  int device_;
  mutable std::mutex mu_;
  std::multimap<size_t, void*> free_;  // size class -> block
  size_t in_use_ = 0, cached_ = 0;
};

}  // namespace gs::cuda
