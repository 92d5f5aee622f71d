// Grouped GEMM with WMMA tensor-core fragments. A 64×64 output tile per block of 4 warps (each
// 32×32 = 2×2 fragments), K in steps of 32 through shared memory; the next K step is loaded into
// registers while the current one is multiplied. Rows are gathered while loading, so the MoE
// permutation never materialises a copy of the activations.
//
// A first version that is simple to verify; a wgmma/TMA kernel is the Hopper follow-up.
#include <mma.h>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_math.cuh"
#include "kernels/cuda/grouped_gemm.h"

namespace gs::cuda {
namespace {

namespace wmma = nvcuda::wmma;

constexpr int BM = kGroupedTileM, BN = 64, BK = 32;
constexpr int LDS = BK + 8;   // bf16 row stride of the staged tiles: 80 bytes, breaks bank conflicts
constexpr int LDC = BN + 4;   // f32 row stride of the output staging
constexpr int kThreads = 128;
constexpr int kChunks = BM * BK / 8 / kThreads;  // 16-byte chunks per thread per operand (2)

__global__ void __launch_bounds__(kThreads) grouped_gemm_kernel(GroupedGemmArgs g) {
  const int tile = blockIdx.y;
  const int e = g.tile_expert[tile];
  if (e < 0) return;
  const int row0 = g.tile_row0[tile];
  const int rows = min(BM, g.group_end[e] - row0);
  const int n0 = blockIdx.x * BN;
  if (rows <= 0) return;

  __shared__ __align__(128) bf16 As[BM * LDS];
  __shared__ __align__(128) bf16 Bs[BN * LDS];
  __shared__ __align__(128) float Cs[BM * LDC];

  const bf16* A = static_cast<const bf16*>(g.a);
  const bf16* B = static_cast<const bf16*>(g.b) + int64_t(e) * g.n * g.k;
  const int tid = threadIdx.x;

  const bf16* a_src[kChunks];
  const bf16* b_src[kChunks];
  bool a_ok[kChunks], b_ok[kChunks];
  int s_off[kChunks], kc[kChunks];
#pragma unroll
  for (int i = 0; i < kChunks; ++i) {
    int c = tid + i * kThreads;
    int r = c / (BK / 8);
    kc[i] = (c % (BK / 8)) * 8;
    s_off[i] = r * LDS + kc[i];
    a_ok[i] = r < rows;
    int p = row0 + (a_ok[i] ? r : 0);
    int src = g.gather ? g.gather[p] / g.gather_div : p;
    a_src[i] = A + int64_t(src) * g.k + kc[i];
    b_ok[i] = n0 + r < g.n;
    b_src[i] = B + int64_t(b_ok[i] ? n0 + r : 0) * g.k + kc[i];
  }

  uint4 ra[kChunks], rb[kChunks];
  auto load = [&](int k0) {
#pragma unroll
    for (int i = 0; i < kChunks; ++i) {
      bool in_k = k0 + kc[i] < g.k;
      ra[i] = a_ok[i] && in_k ? *reinterpret_cast<const uint4*>(a_src[i] + k0) : make_uint4(0, 0, 0, 0);
      rb[i] = b_ok[i] && in_k ? *reinterpret_cast<const uint4*>(b_src[i] + k0) : make_uint4(0, 0, 0, 0);
    }
  };
  auto stage = [&]() {
#pragma unroll
    for (int i = 0; i < kChunks; ++i) {
      *reinterpret_cast<uint4*>(&As[s_off[i]]) = ra[i];
      *reinterpret_cast<uint4*>(&Bs[s_off[i]]) = rb[i];
    }
  };

  const int warp = tid >> 5;
  const int wm = (warp / 2) * 32, wn = (warp % 2) * 32;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.f);

  load(0);
  stage();
  __syncthreads();
  for (int k0 = 0; k0 < g.k; k0 += BK) {
    const bool more = k0 + BK < g.k;
    if (more) load(k0 + BK);
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major> fa[2];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::col_major> fb[2];
#pragma unroll
      for (int i = 0; i < 2; ++i) wmma::load_matrix_sync(fa[i], As + (wm + i * 16) * LDS + kk, LDS);
#pragma unroll
      for (int j = 0; j < 2; ++j) wmma::load_matrix_sync(fb[j], Bs + (wn + j * 16) * LDS + kk, LDS);
#pragma unroll
      for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
    }
    __syncthreads();
    if (more) {
      stage();
      __syncthreads();
    }
  }

#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j)
      wmma::store_matrix_sync(Cs + (wm + i * 16) * LDC + wn + j * 16, acc[i][j], LDC, wmma::mem_row_major);
  __syncthreads();
  bf16* C = static_cast<bf16*>(g.c);
  for (int idx = tid; idx < BM * BN; idx += kThreads) {
    int r = idx / BN, c = idx % BN;
    if (r < rows && n0 + c < g.n) C[int64_t(row0 + r) * g.n + n0 + c] = __float2bfloat16_rn(Cs[r * LDC + c]);
  }
}

}  // namespace

void launch_grouped_gemm(const GroupedGemmArgs& args, cudaStream_t stream) {
  if (args.max_tiles == 0 || args.n == 0) return;
  dim3 grid(unsigned((args.n + BN - 1) / BN), unsigned(args.max_tiles));
  grouped_gemm_kernel<<<grid, kThreads, 0, stream>>>(args);
  GS_CUDA_LAUNCHED("grouped_gemm");
}

}  // namespace gs::cuda
