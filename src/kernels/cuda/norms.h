// Row-wise RMSNorm kernels (norms.cu): y = x · rsqrt(mean(x²) + eps) · w, computed in f32 with one
// rounding to the activation dtype, as the reference's Gemma-4 RMSNorm (raw weight, no 1 + w).
#pragma once
#include <cuda_runtime.h>

#include "core/tensor.h"

namespace gs::cuda {

// out = rms_norm(x) (· weight when non-null). out may alias x.
void launch_rms_norm(const Tensor& x, const Tensor* weight, float eps, const Tensor& out, cudaStream_t stream);

// residual = (residual + rms_norm(x) · weight) · out_scale, in place, with the reference's
// roundings: the normed branch, the sum and (when out_scale != 1) the scaled sum are each stored.
// With next_weight and next_out: also next_out = rms_norm(residual) · next_weight, from the stored
// (rounded) residual row, in the same pass: the next block's input norm without another launch.
void launch_residual_add_norm(const Tensor& residual, const Tensor& x, const Tensor& weight, float eps,
                              float out_scale, cudaStream_t stream, const Tensor* next_weight = nullptr,
                              const Tensor* next_out = nullptr);

}  // namespace gs::cuda
