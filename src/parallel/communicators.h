// The communicators of a tensor-parallel group, chosen by the ranks' backends: in-process host
// collectives for cpu ranks, NCCL (+ the custom all-reduce) for cuda ranks.
#pragma once
#include <memory>
#include <vector>

#include "parallel/gpu_communicator.h"

namespace gs {

std::vector<std::unique_ptr<Communicator>> make_communicators(const std::vector<Backend*>& ranks,
                                                              const GpuCollectiveOptions& gpu = {});

}  // namespace gs
