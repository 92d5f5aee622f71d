// Step-to-step token feedback (scatter_ids.cu): the next step's input ids copied from the sampled
// ids of the step before it, on the device, so the host never waits for them to be scheduled.
#pragma once
#include <cuda_runtime.h>

#include "core/tensor.h"

namespace gs::cuda {

// dst[pairs[2i]] = src[pairs[2i + 1]] for i < num_pairs; d_pairs already on the device. Indices
// are checked on the host by the caller.
void launch_scatter_ids(const Tensor& dst, const Tensor& src, const int* d_pairs, int num_pairs, cudaStream_t stream);

}  // namespace gs::cuda
