#include "kernels/backends.h"

#include "core/error.h"
#include "kernels/cpu/cpu_backend.h"
#ifdef GEMMASERVE_HAVE_CUDA
#include "kernels/cuda/cuda_backend.h"
#endif

namespace gs {

std::unique_ptr<Backend> create_backend(const std::string& name, const BackendOptions& options) {
  if (name == "cpu") return make_cpu_backend();
  if (name == "cuda" || name.rfind("cuda:", 0) == 0) {
#ifdef GEMMASERVE_HAVE_CUDA
    int device = name.size() > 5 ? std::stoi(name.substr(5)) : 0;
    return make_cuda_backend(device, cuda::apply_developer_env(options.kernels));
#else
    (void)options;
    throw Error("backend '{}' requested, but this gemmaserve was built without CUDA (-DGEMMASERVE_CUDA=ON)", name);
#endif
  }
  throw Error("unknown backend '{}' (expected cpu, cuda or cuda:N)", name);
}

bool cuda_available() {
#ifdef GEMMASERVE_HAVE_CUDA
  return cuda_device_count() > 0;
#else
  return false;
#endif
}

}  // namespace gs
