#include "kernels/backends.h"

#include "core/error.h"
#include "core/log.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/kernel_policy_items.h"
#ifdef GEMMASERVE_HAVE_CUDA
#include "kernels/cuda/cuda_backend.h"
#endif

namespace gs {

std::unique_ptr<Backend> create_backend(const std::string& name, const BackendOptions& options) {
  if (name == "cpu") {
    if (std::string changed = cuda::policy_differences(options.kernels); !changed.empty())
      log::info("kernels: the policy ({}) is the cuda backend's; it does not apply to the cpu backend", changed);
    return make_cpu_backend();
  }
  if (name == "cuda" || name.rfind("cuda:", 0) == 0) {
#ifdef GEMMASERVE_HAVE_CUDA
    int device = name.size() > 5 ? std::stoi(name.substr(5)) : 0;
    std::unique_ptr<Backend> backend = make_cuda_backend(device, cuda::apply_developer_env(options.kernels));
    // After the backend's "kernels: ..." description: what an A/B run changed, in the items'
    // form (the installed policy, so it is what the launchers read).
    const std::string changed = cuda::policy_differences(cuda::kernel_policy());
    log::info("kernels: {}", changed.empty() ? std::string("every policy field at its default")
                                             : "differ from the defaults in " + changed);
    return backend;
#else
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
