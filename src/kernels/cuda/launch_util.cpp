#include "kernels/cuda/launch_util.h"

#include <unordered_map>

namespace gs::cuda {

namespace {
struct KernelOnDevice {
  const void* kernel;
  int device;
  bool operator==(const KernelOnDevice&) const = default;
};
struct KernelOnDeviceHash {
  size_t operator()(const KernelOnDevice& k) const {
    return std::hash<const void*>()(k.kernel) ^ (size_t(k.device) * 0x9e3779b97f4a7c15ull);
  }
};
}  // namespace

void allow_smem_on_current_device(const void* kernel, size_t bytes) {
  int dev = 0;
  GS_CUDA_CHECK(cudaGetDevice(&dev));
  // Per thread, so no lock on the launch path: another thread setting the same attribute again
  // is harmless.
  thread_local std::unordered_map<KernelOnDevice, size_t, KernelOnDeviceHash> set_bytes;
  size_t& have = set_bytes[{kernel, dev}];
  if (have >= bytes) return;
  GS_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
  have = bytes;
}

}  // namespace gs::cuda
