// A simple caching allocator for device memory. cudaMalloc/cudaFree synchronise the device and
// cost tens of microseconds, so freed blocks are kept in size classes and handed out again.
// All work runs on one stream, so a block freed by the host can be reused by later work on that
// stream without any event: stream order already puts the old reader before the new writer.
//
// Size classes: round up to 512 bytes below 1 MiB, to 2 MiB above (weights are exact-size big
// blocks and are never freed on the hot path). `release_cached()` returns the cache to the driver,
// which the backend does before reporting free memory and when cudaMalloc runs out.
#pragma once
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace gs::cuda {

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
