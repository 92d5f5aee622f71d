// Collectives between ranks that are threads of this process with host-memory tensors (the cpu
// backend): the exact reference of the GPU communicators. Sums run in rank order, so results are
// deterministic and identical on every rank; CI tests all of tensor parallelism with it.
#pragma once
#include <memory>
#include <vector>

#include "parallel/communicator.h"

namespace gs {

// One communicator per rank of a group of `size` threads; rank r's is element r.
std::vector<std::unique_ptr<Communicator>> make_local_communicators(int size);

}  // namespace gs
