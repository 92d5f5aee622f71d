// The decode path of the MoE experts (moe_gemv.cu): for few routed rows (T·k <= kMoeGemvMaxRows)
// the expert FFNs are bound by streaming each active expert's weights, so they run as GEMVs that
// read every weight once with 16-byte loads from many blocks per expert, all of the expert's rows
// at a time. launch_moe_experts (moe_experts.cu) checks the operands and picks the path.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/cuda/device_math.cuh"
#include "kernels/cuda/moe.h"

namespace gs::cuda {

struct MoeGemvArgs {
  const bf16* x;        // [T, H]
  const int* ids;       // [T, k]
  const float* weights; // [T, k]
  const bf16* gate_up;  // [E, 2I, H]
  const bf16* down;     // [E, H, I]
  int T, k, E, H, I;    // H, I multiples of 8; 16-byte aligned x, gate_up, down
};

size_t moe_gemv_scratch_bytes(int64_t T, int64_t k, int64_t E, int64_t H, int64_t I);

// out [T, H] of OutT (float or bf16). With sum, out receives the MoE layer's sum (moe.h, MoeSum; OutT bf16).
template <typename OutT>
void launch_moe_gemv(const MoeGemvArgs& a, OutT* out, void* scratch, cudaStream_t stream, const MoeSum* sum);

}  // namespace gs::cuda
