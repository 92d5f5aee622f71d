// Launchers of the vision tower's own ops on cuda (vision_ops.cu), Backend semantics in
// ops/backend.h: clamp, the patch embedding's position add, 2-D RoPE, the 3×3 pooler, standardize
// and the soft-token scatter. Activations bf16 (f32 accepted), rounded where the reference stores a
// bf16 tensor; weights bf16 or f32. The bidirectional attention is vision_attention* (its own file).
#pragma once
#include <cuda_runtime.h>

#include "core/tensor.h"

namespace gs::cuda {

void launch_clamp(const Tensor& x, float lo, float hi, cudaStream_t stream);
void launch_vision_position_add(const Tensor& x, const Tensor& table, const Tensor& pos_xy, cudaStream_t stream);
void launch_vision_rope(const Tensor& x, const Tensor& pos_xy, int heads, int head_dim, float theta,
                        cudaStream_t stream);
void launch_vision_pool(const Tensor& x, const Tensor& src, float scale, const Tensor& out, cudaStream_t stream);
void launch_standardize(const Tensor& x, const Tensor& bias, const Tensor& scale, cudaStream_t stream);
void launch_scatter_rows(const Tensor& src, const Tensor& rows, const Tensor& dst, cudaStream_t stream);

}  // namespace gs::cuda
