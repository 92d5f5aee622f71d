// The product backend: NVIDIA GPUs, sm_90a first, sm_80+ through portable paths.
#pragma once
#include <memory>

#include "ops/backend.h"

namespace gs {
std::unique_ptr<Backend> make_cuda_backend(int device);
int cuda_device_count();  // 0 when no driver or device
}  // namespace gs
