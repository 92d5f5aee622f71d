// The reference backend: f32 arithmetic on bf16/f16/f32 weights, threads for the big loops.
#pragma once
#include <memory>

#include "ops/backend.h"

namespace gs {
std::unique_ptr<Backend> make_cpu_backend(int threads = 0);  // 0: GS_CPU_THREADS or all cores
}  // namespace gs
