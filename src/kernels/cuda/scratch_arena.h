// Device scratch for ops that need temporary buffers (MoE permutation, attention split-KV
// partials). One region serves every op: ops run one after another on the backend's single
// stream, so the next op's use of the region is ordered after the previous op's kernels.
//
// The region only grows, and only outside a CUDA graph capture (a captured graph keeps using the
// addresses it recorded): the first eager run of a step sizes it for that step's captures.
#pragma once
#include <cstddef>
#include <memory>
#include <vector>

#include "kernels/cuda/device_allocator.h"

namespace gs::cuda {

class ScratchArena {
 public:
  explicit ScratchArena(std::shared_ptr<DeviceAllocator> alloc) : alloc_(std::move(alloc)) {}

  // A region of at least `bytes` (256-byte aligned), valid until the next call. `capturing`: a
  // graph is being recorded, so growing is an error (named after `op`).
  void* get(size_t bytes, bool capturing, const char* op);
  size_t capacity() const { return bytes_; }

 private:
  std::shared_ptr<DeviceAllocator> alloc_;
  std::shared_ptr<void> block_;
  std::vector<std::shared_ptr<void>> retired_;
  size_t bytes_ = 0;
};

// Carves 256-byte aligned pieces out of one scratch region.
class ScratchCarver {
 public:
  explicit ScratchCarver(void* base = nullptr) : base_(static_cast<char*>(base)) {}
  template <typename T>
  T* take(size_t count) {
    T* p = reinterpret_cast<T*>(base_ + used_);
    used_ += (count * sizeof(T) + 255) / 256 * 256;
    return p;
  }
  size_t used() const { return used_; }

 private:
  char* base_;
  size_t used_ = 0;
};

}  // namespace gs::cuda
