#include "kernels/cuda/device_allocator.h"

#include <cuda_runtime.h>

#include "core/error.h"
#include "kernels/cuda/cuda_check.h"

namespace gs::cuda {

DeviceAllocator::~DeviceAllocator() {
  // Destructors must not throw: errors here (a dead context at exit) are ignored.
  cudaSetDevice(device_);
  for (auto& [size, p] : free_) cudaFree(p);
}

size_t DeviceAllocator::round_size(size_t bytes) {
  if (bytes == 0) bytes = 1;
  const size_t small = 512, big = size_t(2) << 20;
  if (bytes < (size_t(1) << 20)) return (bytes + small - 1) / small * small;
  return (bytes + big - 1) / big * big;
}

std::shared_ptr<void> DeviceAllocator::allocate(size_t bytes) {
  size_t size = round_size(bytes);
  void* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // Exact class only: a larger cached block would waste memory that the KV pools want.
    auto it = free_.find(size);
    if (it != free_.end()) {
      p = it->second;
      free_.erase(it);
      cached_ -= size;
    }
  }
  if (!p) {
    GS_CUDA_CHECK(cudaSetDevice(device_));
    cudaError_t err = cudaMalloc(&p, size);
    if (err == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      release_cached();
      err = cudaMalloc(&p, size);
    }
    if (err != cudaSuccess) {
      cudaGetLastError();
      size_t free_b = 0, total_b = 0;
      cudaMemGetInfo(&free_b, &total_b);
      throw Error("out of GPU memory on cuda:{}: allocating {:.1f} MiB ({:.1f} MiB in use by gemmaserve, {:.1f} MiB free "
                  "of {:.1f} MiB): {}",
                  device_, size / 1048576.0, bytes_in_use() / 1048576.0, free_b / 1048576.0, total_b / 1048576.0,
                  cudaGetErrorString(err));
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    in_use_ += size;
  }
  auto self = shared_from_this();
  return std::shared_ptr<void>(p, [self, size](void* q) { self->give_back(q, size); });
}

void DeviceAllocator::give_back(void* p, size_t size) {
  std::lock_guard<std::mutex> lock(mu_);
  in_use_ -= size;
  cached_ += size;
  free_.emplace(size, p);
}

void DeviceAllocator::release_cached() {
  std::multimap<size_t, void*> blocks;
  {
    std::lock_guard<std::mutex> lock(mu_);
    blocks.swap(free_);
    cached_ = 0;
  }
  if (blocks.empty()) return;
  cudaSetDevice(device_);
  // Blocks may still be read by queued work: wait before handing them to the driver.
  cudaDeviceSynchronize();
  for (auto& [size, p] : blocks) cudaFree(p);
}

size_t DeviceAllocator::bytes_in_use() const {
  std::lock_guard<std::mutex> lock(mu_);
  return in_use_;
}

size_t DeviceAllocator::bytes_cached() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cached_;
}

}  // namespace gs::cuda
