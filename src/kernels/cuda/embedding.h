// Token embedding gathers (embedding.cu): the scaled token embedding and the per-layer inputs
// (PLE) of E2B/E4B. Ids outside the table give zero rows (ids are validated upstream: a kernel
// cannot raise an error without a host synchronisation).
#pragma once
#include <cuda_runtime.h>

#include "core/tensor.h"

namespace gs::cuda {

// out[t] = round(table[ids[t] - first_id] · scale); first_id > 0 for a rank's vocabulary shard.
void launch_embedding(const Tensor& table, const Tensor& ids, float scale, const Tensor& out, cudaStream_t stream,
                      int64_t first_id = 0);

// out[l,t] = (rms_norm(round(proj[t,l]·proj_scale))·norm_w + round(table[ids[t],l]·table_scale))·combine_scale,
// see Backend::per_layer_inputs; proj [T, L·P], table [V, L·P], out [L, T, P].
void launch_per_layer_inputs(const Tensor& proj, const Tensor& table, const Tensor& ids, const Tensor& norm_w,
                             float proj_scale, float table_scale, float combine_scale, float eps, const Tensor& out,
                             cudaStream_t stream);

}  // namespace gs::cuda
