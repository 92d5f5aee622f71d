// The product backend: NVIDIA GPUs, sm_90a first, sm_80+ through portable paths.
#pragma once
#include <memory>

#include "kernels/cuda/kernel_policy.h"
#include "ops/backend.h"

namespace gs {
// The backend installs `policy` for the process's launchers (kernel_policy.h) and logs it.
std::unique_ptr<Backend> make_cuda_backend(int device, const cuda::KernelPolicy& policy = {});
int cuda_device_count();  // 0 when no driver or device
}  // namespace gs
