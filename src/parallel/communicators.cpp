#include "parallel/communicators.h"

#include "core/error.h"
#include "parallel/all_reduce_bench.h"
#include "parallel/local_communicator.h"

namespace gs {

#if !GEMMASERVE_HAVE_CUDA
std::vector<std::unique_ptr<Communicator>> make_gpu_communicators(const std::vector<Backend*>&,
                                                                  const GpuCollectiveOptions&) {
  throw Error("tensor parallelism on GPUs needs a build with CUDA (and NCCL)");
}
std::vector<AllReduceBenchRow> run_all_reduce_bench(const AllReduceBenchOptions&) {
  throw Error("bench-allreduce needs a build with CUDA (and NCCL)");
}
#endif

std::vector<std::unique_ptr<Communicator>> make_communicators(const std::vector<Backend*>& ranks,
                                                              const GpuCollectiveOptions& gpu) {
  GS_CHECK(!ranks.empty(), "tensor parallel: no ranks");
  const Device d = ranks[0]->device();
  for (size_t r = 1; r < ranks.size(); ++r)
    GS_CHECK(ranks[r]->device() == d, "tensor parallel: rank 0 runs on {}, rank {} on {}", ranks[0]->name(), r,
             ranks[r]->name());
  if (d == Device::CPU) return make_local_communicators(int(ranks.size()));
  return make_gpu_communicators(ranks, gpu);
}

}  // namespace gs
