// Choosing a backend at run time.
#pragma once
#include <memory>
#include <string>

#include "ops/backend.h"

namespace gs {
// "cpu" (threads: GS_CPU_THREADS or all cores), "cuda" or "cuda:N". Throws gs::Error when the
// backend is not built in or no device is visible.
std::unique_ptr<Backend> create_backend(const std::string& name);
bool cuda_available();  // built with CUDA and a device is visible
}  // namespace gs
