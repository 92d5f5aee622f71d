// Launchers of the simple per-element kernels (elementwise.cu, fill.cu). Each checks shapes and
// dtypes on the host (gs::Error naming the op and the tensors) and enqueues on `stream`.
// Activations are bf16; f32 is accepted too (logits, tests), always with f32 arithmetic and one
// rounding at each point where the reference stores a bf16 tensor.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "core/tensor.h"

namespace gs::cuda {

void launch_add(const Tensor& a, const Tensor& b, const Tensor& out, cudaStream_t stream);
void launch_scale(const Tensor& x, float s, cudaStream_t stream);
void launch_gelu_tanh_mul(const Tensor& gate_up, const Tensor& out, cudaStream_t stream);
void launch_gelu_tanh_mul_pair(const Tensor& a, const Tensor& b, const Tensor& out, cudaStream_t stream);
void launch_softcap(const Tensor& x, float cap, cudaStream_t stream);
void launch_gather_rows(const Tensor& x, const Tensor& rows, const Tensor& out, cudaStream_t stream);

void launch_fill(const Tensor& t, float value, cudaStream_t stream);
void launch_fill_uniform(const Tensor& t, uint64_t seed, float scale, cudaStream_t stream);
// dst (bf16, device) = src (f32/f16/bf16, device), element for element, round to nearest even.
void launch_convert_to_bf16(const void* src, DType src_dtype, void* dst, int64_t n, cudaStream_t stream);

}  // namespace gs::cuda
