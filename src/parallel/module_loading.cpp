#include "parallel/module_loading.h"

#include <cstdlib>

#if GEMMASERVE_HAVE_CUDA
#include <cuda.h>  // CUmoduleLoadingMode; the function is reached through the runtime
#include <cuda_runtime.h>
#endif

namespace gs {

void prefer_eager_module_loading() { ::setenv("CUDA_MODULE_LOADING", "EAGER", /*overwrite=*/0); }

bool cuda_modules_load_lazily() {
#if GEMMASERVE_HAVE_CUDA
  // cuModuleGetLoadingMode through the runtime's entry-point lookup: the driver library is not
  // linked (its symbols come from the driver the runtime loaded).
  using GetLoadingMode = CUresult (*)(CUmoduleLoadingMode*);
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found{};
  if (cudaGetDriverEntryPointByVersion("cuModuleGetLoadingMode", &fn, 12000, cudaEnableDefault, &found) !=
          cudaSuccess ||
      found != cudaDriverEntryPointSuccess || fn == nullptr)
    return false;
  CUmoduleLoadingMode mode{};
  if (reinterpret_cast<GetLoadingMode>(fn)(&mode) != CUDA_SUCCESS) return false;
  return mode == CU_MODULE_LAZY_LOADING;
#else
  return false;
#endif
}

}  // namespace gs
