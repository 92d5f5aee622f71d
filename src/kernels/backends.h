// Choosing a backend at run time.
#pragma once
#include <memory>
#include <string>

#include "kernels/cuda/kernel_policy.h"
#include "ops/backend.h"

namespace gs {

// What a backend is created with. `kernels`: the cuda backend's kernel choices (kernel_policy.h;
// the defaults are the product's; `--kernel-policy` items, kernel_policy_items.h, change fields),
// before the developer variables of kernel_policy_env.cpp.
struct BackendOptions {
  cuda::KernelPolicy kernels;
};

// "cpu" (threads: GS_CPU_THREADS or all cores), "cuda" or "cuda:N". Throws gs::Error when the
// backend is not built in or no device is visible.
std::unique_ptr<Backend> create_backend(const std::string& name, const BackendOptions& options = {});
bool cuda_available();  // built with CUDA and a device is visible
}  // namespace gs
