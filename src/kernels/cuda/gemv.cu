// Skinny GEMM for decode (gemv.h). Layout of the work:
//   block   128 threads = 4 warps; the warps split into groups of `ks` warps, each group owns
//           kRowsPerWarp consecutive weight rows (output columns n) and its ks warps split K
//   lane    16-byte chunks c = kpart·32 + lane + i·32·ks of each of the group's rows, so a warp's
//           32 loads of one row are 512 contiguous bytes
//   rows    every x chunk a lane loads serves kRowsPerWarp weight rows (x is re-read from L1, so
//           its traffic is M / kRowsPerWarp times the weight traffic, not M times)
// ks > 1 only when N is too small to give every SM a few blocks; the ks partial sums meet in
// shared memory inside the block, so there is never a second kernel.
//
// Before pdl_wait() a lane loads its first kStages chunks of each row into registers (and, with a
// budget set, lanes 0-3 of a group ask L2 to prefetch more of their row: off by default, see
// policy()). That is the point of the kernel under PDL: the previous kernel's tail and this
// kernel's launch overlap its first weight bytes. Then it waits, releases the next kernel and
// streams the rest.
#include "kernels/cuda/gemv.h"

#include <algorithm>
#include <type_traits>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_math.cuh"
#include "kernels/cuda/gemv_device.cuh"
#include "kernels/cuda/gemv_mma.cuh"
#include "kernels/cuda/gemv_stream.cuh"
#include "kernels/cuda/kernel_policy.h"
#include "kernels/cuda/launch_util.h"

namespace gs::cuda {
namespace {

using namespace gemv_impl;

// The installed policy's GEMV part: the L2 bulk prefetch before the wait (off by default: in the
// decode step it queued ahead of the small kernels' reads), the K split, streaming and the
// tensor-core variant's rows and shape (decision records "GEMV ...", docs/kernel-policy.md).
const GemvPolicy& policy() { return kernel_policy().gemv; }

// MT: compile-time bound on M (M <= MT; rows m >= M are skipped, never read). kStages: chunks per
// row each lane has in flight (kRowsPerWarp·kStages·16 B); the host picks 4 only where the grid
// still fits in one wave with the registers that costs (see launch_t).
// aux: GeluMulAux's second factor ([M, N]), read after the wait (the previous kernels write it).
template <int MT, int kStages, typename OutT, Epi E = Epi::Store>
__global__ void __launch_bounds__(kThreads) gemv_kernel(const bf16* __restrict__ x, const bf16* __restrict__ w,
                                                        OutT* __restrict__ out, int M, int N, int K, int ks,
                                                        uint32_t pf_row_bytes, const bf16* __restrict__ aux) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int kpart = warp % ks, group = warp / ks, groups = kWarps / ks;
  const int unit = blockIdx.x * groups + group;
  const int C = K >> 3;
  const int stride = 32 * ks;

  const bf16* rows[kRowsPerWarp];
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) rows[r] = w + int64_t(weight_row<E>(unit, r, N)) * K;

  // ---- before the wait: weights only ----
  int c = kpart * 32 + lane;
  uint4 wb[kStages][kRowsPerWarp];
#pragma unroll
  for (int s = 0; s < kStages; ++s)
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r)
      wb[s][r] = c + s * stride < C ? ld_weight(rows[r] + int64_t(c + s * stride) * 8) : make_uint4(0, 0, 0, 0);
  prefetch_unit_rows<E, kStages>(w, unit, N, K, stride, pf_row_bytes, kpart, lane);

  pdl_wait();
  pdl_launch_dependents();

  float acc[kRowsPerWarp][MT];
  zero(acc);

  for (; c < C; c += kStages * stride) {
#pragma unroll
    for (int s = 0; s < kStages; ++s) {
      const int cs = c + s * stride;
      if (cs < C) {
        float wf[kRowsPerWarp][8];
#pragma unroll
        for (int r = 0; r < kRowsPerWarp; ++r) unpack8(wb[s][r], wf[r]);
        // Refill this stage with the chunk kStages·stride further on before the arithmetic, so
        // the loads are in flight while it runs.
        const int cn = cs + kStages * stride;
        if (cn < C) {
#pragma unroll
          for (int r = 0; r < kRowsPerWarp; ++r) wb[s][r] = ld_weight(rows[r] + int64_t(cn) * 8);
        }
        accumulate_chunk<MT>(acc, wf, x, M, K, cs);
      }
    }
  }

  finish_unit<MT, OutT, E, false>(acc, out, aux, M, N, unit, ks, kpart, warp, lane);
}

template <typename K>
int occupancy(K kernel) {
  int b = 0;
  GS_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, kernel, kThreads, 0));
  return std::max(b, 1);
}

// Bytes of each weight row a block asks L2 to prefetch before its wait: the budget spread over the
// rows whose blocks can be resident at once (`resident_rows`, capped at N), 16-byte multiples.
uint32_t l2_prefetch_per_row(int64_t N, int64_t K, int64_t resident_rows) {
  const int64_t budget = policy().l2_prefetch_bytes;
  if (budget <= 0) return 0;
  const int64_t rows = std::max<int64_t>(std::min<int64_t>(N, resident_rows), 1);
  return uint32_t(std::min<int64_t>(K * 2, budget / rows) & ~int64_t(15));
}

// N: weight rows (2I for GeluMul).
template <int MT, typename OutT, Epi E = Epi::Store>
void launch_t(const bf16* x, const bf16* w, OutT* out, int M, int N, int K, cudaStream_t stream,
              const bf16* aux = nullptr) {
  const int sms = sm_count();
  const int C = K / 8;
  // Split K inside the block while the grid has fewer than the policy's min_blocks_per_sm blocks
  // per SM and each lane keeps two chunks per row: many blocks per SM keep the last wave's tail
  // short on big weights (docs/kernel-policy.md, "GEMV routing: weight size at one row, and the K
  // split").
  const int min_blocks_per_sm = policy().min_blocks_per_sm;
  int ks = 1;
  auto blocks_for = [&](int k_split) {
    const int rows_per_block = (kWarps / k_split) * kRowsPerWarp;
    return (N + rows_per_block - 1) / rows_per_block;
  };
  while (ks < kWarps && blocks_for(ks) < min_blocks_per_sm * sms && C >= 32 * (2 * ks) * 2) ks *= 2;
  const int blocks = blocks_for(ks);
  // 4 stages in flight only when the whole grid is resident at once with them: deeper stages that
  // cost a second wave lose more than they hide (docs/kernel-policy.md, "GEMV stages").
  static const int occ4 = MT <= 2 ? occupancy(gemv_kernel<MT, 4, OutT, E>) : 0;
  static const int occ2 = occupancy(gemv_kernel<MT, 2, OutT, E>);
  const bool deep = MT <= 2 && blocks <= occ4 * sms;
  auto kernel = deep ? gemv_kernel<MT, (MT <= 2 ? 4 : 2), OutT, E> : gemv_kernel<MT, 2, OutT, E>;
  const int blocks_per_sm = deep ? occ4 : occ2;
  const uint32_t pf = l2_prefetch_per_row(N, K, int64_t(blocks_per_sm) * sms * (kWarps / ks) * kRowsPerWarp);

  if constexpr (MT <= 2) {
    // Beyond one wave of 2-stage blocks, one and two rows stream: every warp group takes the same
    // number of units and the grid shrinks to the fewest blocks that cover them, so no block has a
    // unit more.
    // Rows of at least kStreamLongRowK elements (31B's every weight) take the variant held to 6
    // blocks an SM: 80 registers and a few spills, which only long units absorb (docs/kernel-policy.md,
    // "GEMV streaming and L2 prefetch").
    constexpr int kStreamLongRowK = 4096;
    static const int occ_stream = occupancy(gemv_stream_kernel<MT, 2, OutT, E>);
    static const int occ_long = occupancy(gemv_stream_kernel<MT, 2, OutT, E, 6>);
    if (!deep && blocks > occ2 * sms && policy().streaming) {
      const bool long_rows = K >= kStreamLongRowK;
      const int occ = long_rows ? occ_long : occ_stream;
      const int units_per_group = (blocks + occ * sms - 1) / (occ * sms);
      const int grid = (blocks + units_per_group - 1) / units_per_group;
      launch_pdl("gemv_stream_kernel",
                 long_rows ? gemv_stream_kernel<MT, 2, OutT, E, 6> : gemv_stream_kernel<MT, 2, OutT, E>, dim3(grid),
                 dim3(kThreads), 0, stream, x, w, out, M, N, K, ks, pf, aux, units_per_group);
      return;
    }
  }
  launch_pdl("gemv_kernel", kernel, dim3(blocks), dim3(kThreads), 0, stream, x, w, out, M, N, K, ks, pf, aux);
}

// The mma variant's shape (policy().mma_shape): stages in each warp's shared-memory ring, n8
// tiles per warp, and the warps per SM below which K is split. 3,1,16 was the best all-round of
// those tried (decision record "GEMV tensor-core shape", docs/kernel-policy.md).
template <bool kHigh, int kStages, int kTiles, typename OutT, Epi E>
void launch_mma_t(const bf16* x, const bf16* w, OutT* out, int M, int N, int K, const bf16* aux,
                  cudaStream_t stream) {
  const bool row_tiled = kernel_policy().batch_invariant;
  auto kernel = row_tiled ? gemv_mma_kernel<kHigh, kStages, kTiles, OutT, E, true>
                          : gemv_mma_kernel<kHigh, kStages, kTiles, OutT, E, false>;
  constexpr size_t smem = mma_smem_bytes<kStages, kTiles>();
  allow_smem(kernel, smem);
  const int sms = sm_count();
  const int C = K / 8;
  int ks = 1;
  const int rows_per_warp = kMmaRowsPerTile * kTiles;
  auto blocks_for = [&](int k_split) {
    const int rows_per_block = (kWarps / k_split) * rows_per_warp;
    return (N + rows_per_block - 1) / rows_per_block;
  };
  // As for the FMA kernel: split K in the block while there are fewer warps per SM than the
  // shape asks and every warp keeps at least split_min_stages stages (decision record "GEMV
  // tensor-core K split", docs/kernel-policy.md).
  const int min_stages = policy().mma_shape.split_min_stages;
  while (ks < kWarps && blocks_for(ks) * kWarps < policy().mma_shape.warps_per_sm * sms &&
         C >= kMmaStageChunks * (2 * ks) * min_stages)
    ks *= 2;
  // Rows past 16 (batch-invariant policy only, on the row-tiled kernel at every M) take more 16-row
  // tiles in grid y, ordered after the weight blocks so a tile re-reads weights the one before it
  // left in L2 where they fit.
  const int row_tiles = row_tiled ? (M + 15) / 16 : 1;
  launch_pdl("gemv_mma_kernel", kernel, dim3(blocks_for(ks), row_tiles), dim3(kThreads), smem, stream, x, w, out, M,
             N, K, ks, aux);
}

// N: weight rows (2I for GeluMul, which always pairs two tiles).
template <typename OutT, Epi E>
void launch_mma(const bf16* x, const bf16* w, OutT* out, int M, int N, int K, const bf16* aux, cudaStream_t stream) {
  const GemvMmaShape& s = policy().mma_shape;
  auto by_stages = [&](auto high, auto tiles) {
    constexpr bool H = decltype(high)::value;
    constexpr int T = decltype(tiles)::value;
    switch (s.stages) {
      case 2: return launch_mma_t<H, 2, T, OutT, E>(x, w, out, M, N, K, aux, stream);
      case 4: return launch_mma_t<H, 4, T, OutT, E>(x, w, out, M, N, K, aux, stream);
      default: return launch_mma_t<H, 3, T, OutT, E>(x, w, out, M, N, K, aux, stream);
    }
  };
  auto by_tiles = [&](auto high) {
    if (E == Epi::GeluMul || s.tiles == 2) by_stages(high, std::integral_constant<int, 2>{});
    else if constexpr (E != Epi::GeluMul) by_stages(high, std::integral_constant<int, 1>{});
  };
  if (M > 8) by_tiles(std::true_type{});
  else by_tiles(std::false_type{});
}

// The FMA kernel at the smallest compile-time row bound MT >= M (below policy().mma_min_rows rows).
template <typename OutT, Epi E>
void launch_fma(const bf16* x, const bf16* w, OutT* out, int M, int N, int K, const bf16* aux, cudaStream_t stream) {
  if (M <= 1) launch_t<1, OutT, E>(x, w, out, M, N, K, stream, aux);
  else if (M <= 2) launch_t<2, OutT, E>(x, w, out, M, N, K, stream, aux);
  else if (M <= 4) launch_t<4, OutT, E>(x, w, out, M, N, K, stream, aux);
  else if (M <= 8) launch_t<8, OutT, E>(x, w, out, M, N, K, stream, aux);
  else launch_t<16, OutT, E>(x, w, out, M, N, K, stream, aux);
}

// Batch-invariant policy: every row count on the tensor-core kernel, whose K split is chosen from N
// and K only, so one row's bits are those of any batch it is in.
template <typename OutT, Epi E>
void dispatch_m(const bf16* x, const bf16* w, OutT* out, int M, int N, int K, const bf16* aux, cudaStream_t stream) {
  if (M >= policy().mma_min_rows || kernel_policy().batch_invariant)
    launch_mma<OutT, E>(x, w, out, M, N, K, aux, stream);
  else launch_fma<OutT, E>(x, w, out, M, N, K, aux, stream);
}

}  // namespace

bool gemv_supported(int64_t m, int64_t n, int64_t k, DType out_dtype, const void* x, const void* w) {
  const int64_t max_rows = kernel_policy().batch_invariant ? kGemvInvariantMaxRows : kGemvMaxRows;
  return m >= 1 && m <= max_rows && n >= 1 && n < (int64_t(1) << 31) && k >= 8 && k % 8 == 0 &&
         k < (int64_t(1) << 28) && (out_dtype == DType::BF16 || out_dtype == DType::F32) && aligned16(x) &&
         aligned16(w);
}

void launch_gemv(const void* x, const void* w, void* out, DType out_dtype, int64_t m, int64_t n, int64_t k,
                 cudaStream_t stream) {
  require(gemv_supported(m, n, k, out_dtype, x, w), "gemv: unsupported operands M=", m, " N=", n, " K=", k,
          " out ", dtype_name(out_dtype), " (M <= ", kGemvMaxRows,
          " or batch-invariant tiles, K % 8 == 0, 16-byte aligned x and w)");
  const bf16* xb = static_cast<const bf16*>(x);
  const bf16* wb = static_cast<const bf16*>(w);
  if (out_dtype == DType::F32)
    dispatch_m<float, Epi::Store>(xb, wb, static_cast<float*>(out), int(m), int(n), int(k), nullptr, stream);
  else
    dispatch_m<bf16, Epi::Store>(xb, wb, static_cast<bf16*>(out), int(m), int(n), int(k), nullptr, stream);
}

void launch_gemv_gelu_mul(const void* x, const void* w, void* out, int64_t m, int64_t inter, int64_t k,
                          cudaStream_t stream) {
  require(gemv_supported(m, 2 * inter, k, DType::BF16, x, w), "gemv_gelu_mul: unsupported operands M=", m,
          " I=", inter, " K=", k);
  dispatch_m<bf16, Epi::GeluMul>(static_cast<const bf16*>(x), static_cast<const bf16*>(w), static_cast<bf16*>(out),
                                 int(m), int(2 * inter), int(k), nullptr, stream);
}

void launch_gemv_gelu_mul_aux(const void* x, const void* w, const void* aux, void* out, int64_t m, int64_t n,
                              int64_t k, cudaStream_t stream) {
  require(gemv_supported(m, n, k, DType::BF16, x, w) && aux, "gemv_gelu_mul_aux: unsupported operands M=", m,
          " N=", n, " K=", k);
  dispatch_m<bf16, Epi::GeluMulAux>(static_cast<const bf16*>(x), static_cast<const bf16*>(w),
                                    static_cast<bf16*>(out), int(m), int(n), int(k), static_cast<const bf16*>(aux),
                                    stream);
}

}  // namespace gs::cuda
