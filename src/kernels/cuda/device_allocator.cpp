#include "kernels/cuda/device_allocator.h"

#include <cuda_runtime.h>

#include "core/error.h"
#include "kernels/cuda/cuda_check.h"

namespace gs::cuda {

namespace {

constexpr int kMaxDevices = 64;

// The private stream of `device` (made on first use), its pool kept from shrinking between uses.
cudaStream_t pool_stream(int device) {
  static std::mutex mu;
  static cudaStream_t streams[kMaxDevices] = {};
  GS_CHECK(device >= 0 && device < kMaxDevices, "device allocator: device {} beyond {}", device, kMaxDevices);
  std::lock_guard<std::mutex> lock(mu);
  if (!streams[device]) {
    GS_CUDA_CHECK(cudaStreamCreateWithFlags(&streams[device], cudaStreamNonBlocking));
    cudaMemPool_t pool = nullptr;
    GS_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, device));
    uint64_t keep = UINT64_MAX;  // the caching allocator above decides when memory goes back
    GS_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
  }
  return streams[device];
}

// Lets this thread make the calls below while it captures a graph (they touch no captured stream).
struct RelaxedCapture {
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  RelaxedCapture() { cudaThreadExchangeStreamCaptureMode(&mode); }
  ~RelaxedCapture() { cudaThreadExchangeStreamCaptureMode(&mode); }
};

}  // namespace

cudaError_t pool_malloc(int device, size_t bytes, void** p) {
  const cudaStream_t s = pool_stream(device);
  RelaxedCapture relaxed;
  GS_CUDA_CHECK(cudaSetDevice(device));
  cudaError_t err = cudaMallocAsync(p, bytes, s);
  if (err != cudaSuccess) return err;
  return cudaStreamSynchronize(s);
}

void pool_free(int device, void* p) {
  const cudaStream_t s = pool_stream(device);
  RelaxedCapture relaxed;
  cudaSetDevice(device);
  cudaFreeAsync(p, s);
  cudaStreamSynchronize(s);
}

void pool_trim(int device) {
  cudaMemPool_t pool = nullptr;
  if (cudaDeviceGetDefaultMemPool(&pool, device) == cudaSuccess) cudaMemPoolTrimTo(pool, 0);
}

DeviceAllocator::~DeviceAllocator() {
  // Destructors must not throw: errors here (a dead context at exit) are ignored.
  try {
    for (auto& [size, p] : free_) pool_free(device_, p);
    pool_trim(device_);
  } catch (...) {
  }
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
    cudaError_t err = pool_malloc(device_, size, &p);
    if (err == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      release_cached();
      err = pool_malloc(device_, size, &p);
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
  for (auto& [size, p] : blocks) pool_free(device_, p);
  pool_trim(device_);
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
