// Collectives between the GPUs of this process: NCCL (communicators built at start-up with
// ncclCommInitAll, one per rank) and, for messages up to a threshold, the one-shot custom
// all-reduce over peer memory (custom_all_reduce.h). Every call is enqueued on the rank backend's
// stream and can be captured in its CUDA graphs. Declared for every build; without CUDA the
// factory throws.
#pragma once
#include <cstddef>
#include <memory>
#include <vector>

#include "ops/backend.h"
#include "parallel/communicator.h"

namespace gs {

struct GpuCollectiveOptions {
  bool custom_all_reduce = true;           // false: NCCL only
  size_t custom_max_bytes = size_t(8) << 20;  // buffer size of the custom all-reduce
  // Messages up to this many bytes go through the custom all-reduce, larger ones through NCCL.
  // The decode messages (batch · hidden · 2 bytes: 10.5 KB to 688 KB for 31B) sit below it.
  size_t custom_threshold_bytes = size_t(1) << 20;
  // Messages up to this many bytes take the custom all-reduce's push kernel (0: the one-shot kernel
  // only; its buffers cost 2 · ranks · this per GPU); kPushByRanks: 1 MiB at 2 ranks, 256 KiB at
  // more, where each rank's writes to 3+ peers make larger pushes slower than the one-shot kernel
  // (docs/perf/tensor-parallel.md). GS_TP_ALLREDUCE_PUSH=0 sets 0.
  static constexpr size_t kPushByRanks = ~size_t(0);
  size_t custom_push_max_bytes = kPushByRanks;
  // The all-reduce after o_proj and down fused with the residual add and norms that follow it
  // (Communicator::all_reduce_residual_norm), where the push kernel takes the message.
  // GS_TP_FUSE_NORM=0 sets false.
  bool fuse_norm = true;
};

// One communicator per rank; ranks[r] is rank r's cuda backend (each on its own device).
// Throws gs::Error naming the rank on any NCCL or CUDA failure.
std::vector<std::unique_ptr<Communicator>> make_gpu_communicators(const std::vector<Backend*>& ranks,
                                                                  const GpuCollectiveOptions& opt = {});

}  // namespace gs
