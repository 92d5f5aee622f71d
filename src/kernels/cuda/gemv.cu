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
// Before pdl_wait() a lane loads its first kStages chunks of each row into registers and lanes
// 0-3 of a group ask L2 to prefetch more of their row (cp.async.bulk.prefetch, capped so the
// resident blocks together stay within a budget well under the 50 MB L2). That is the point of
// the kernel under PDL: the previous kernel's tail and this kernel's launch overlap its first
// weight bytes. Then it waits, releases the next kernel and streams the rest.
#include "kernels/cuda/gemv.h"

#include <algorithm>
#include <cstdlib>

#include "kernels/cuda/attention_mma.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_math.cuh"
#include "kernels/cuda/launch_util.h"

namespace gs::cuda {
namespace {

constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;
constexpr int kRowsPerWarp = 4;  // weight rows per warp group


int64_t g_l2_budget = int64_t(16) << 20;

// What the FMA kernel does with its dot products (gemv.h): store them, or apply a Gemma MLP's
// activation first.
enum class Epi { Store, GeluMul, GeluMulAux };

// The weight row that a warp group's accumulator r reads. Store and GeluMulAux: kRowsPerWarp
// consecutive rows. GeluMul (N = 2I): two gate rows j, j+1 and the matching up rows I+j, I+j+1, so
// the group holds both factors of its two outputs. Rows past the end read the last valid row
// (valid memory, never stored): no predication in the loop.
template <Epi E>
__device__ __forceinline__ int weight_row(int unit, int r, int N) {
  if constexpr (E == Epi::GeluMul) {
    const int I = N >> 1, j = min(unit * 2 + (r & 1), I - 1);
    return r < 2 ? j : I + j;
  } else {
    return min(unit * kRowsPerWarp + r, N - 1);
  }
}

// Weights are read once: no L1 allocation, non-coherent path (they never change). volatile keeps
// the loads issued before pdl_wait(), which is itself a volatile asm.
__device__ __forceinline__ uint4 ld_weight(const bf16* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

__device__ __forceinline__ void prefetch_l2(const void* p, uint32_t bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p), "r"(bytes) : "memory");
#endif
}

__device__ __forceinline__ void unpack8(const uint4& raw, float (&f)[8]) {
  const __nv_bfloat162* p = reinterpret_cast<const __nv_bfloat162*>(&raw);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    float2 t = __bfloat1622float2(p[i]);
    f[2 * i] = t.x;
    f[2 * i + 1] = t.y;
  }
}

// A unit's end: the warp sums, the ks > 1 partials met in shared memory, the epilogue's stores.
// Every warp of the block calls it at the same step. kReuse: another unit follows, so the
// partials' buffer is freed by a second barrier and acc is zeroed.
template <int MT, typename OutT, Epi E, bool kReuse>
__device__ __forceinline__ void finish_unit(float (&acc)[kRowsPerWarp][MT], OutT* __restrict__ out,
                                            const bf16* __restrict__ aux, int M, int N, int unit, int ks, int kpart,
                                            int warp, int lane) {
  const int row0 = unit * kRowsPerWarp;
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r)
#pragma unroll
    for (int m = 0; m < MT; ++m)
      if (m < M) acc[r][m] = warp_sum(acc[r][m]);

  bool store = true;
  if (ks > 1) {
    // The group's ks warps each hold a partial sum over their share of K; the first adds the
    // others' in a fixed order (deterministic for a given shape).
    __shared__ float part[kWarps][kRowsPerWarp][MT];
    if (lane == 0)
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r)
#pragma unroll
        for (int m = 0; m < MT; ++m) part[warp][r][m] = acc[r][m];
    __syncthreads();
    if (kpart == 0) {
      for (int p = 1; p < ks; ++p)
#pragma unroll
        for (int r = 0; r < kRowsPerWarp; ++r)
#pragma unroll
          for (int m = 0; m < MT; ++m) acc[r][m] += part[warp + p][r][m];
    } else {
      store = false;
    }
    if constexpr (kReuse) __syncthreads();  // part is rewritten by the next unit
  }

  // Every lane holds every sum; lane (r·MT + m) mod 32 stores output (m, r). The activations round
  // as the unfused ops do: each product to bf16 (the matmul's output), gelu(gate) again (GeluMulOp).
  if (store) {
    if constexpr (E == Epi::Store) {
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r)
#pragma unroll
        for (int m = 0; m < MT; ++m)
          if ((r * MT + m) % 32 == lane && m < M && row0 + r < N)
            out[int64_t(m) * N + row0 + r] = from_f32<OutT>(acc[r][m]);
    } else if constexpr (E == Epi::GeluMul) {
      const int I = N >> 1;
#pragma unroll
      for (int r = 0; r < 2; ++r)
#pragma unroll
        for (int m = 0; m < MT; ++m)
          if ((r * MT + m) % 32 == lane && m < M && unit * 2 + r < I) {
            const float g = rnd<bf16>(acc[r][m]), u = rnd<bf16>(acc[r + 2][m]);
            out[int64_t(m) * I + unit * 2 + r] = from_f32<OutT>(rnd<bf16>(gelu_tanh(g)) * u);
          }
    } else {
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r)
#pragma unroll
        for (int m = 0; m < MT; ++m)
          if ((r * MT + m) % 32 == lane && m < M && row0 + r < N) {
            const int64_t i = int64_t(m) * N + row0 + r;
            out[i] = from_f32<OutT>(rnd<bf16>(gelu_tanh(rnd<bf16>(acc[r][m]))) * to_f32(aux[i]));
          }
    }
  }
  if constexpr (kReuse) {
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r)
#pragma unroll
      for (int m = 0; m < MT; ++m) acc[r][m] = 0.f;
  }
}

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
  const int row0 = unit * kRowsPerWarp;
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
  if (pf_row_bytes && kpart == 0 && lane < kRowsPerWarp && row0 + lane < N) {
    // The register loads above cover the row's first kStages·stride chunks.
    const uint32_t skip = uint32_t(kStages * stride * 16), row_bytes = uint32_t(K) * 2;
    const uint32_t end = min(pf_row_bytes, row_bytes);
    const bf16* row = w + int64_t(weight_row<E>(unit, lane, N)) * K;
    if (end > skip) prefetch_l2(reinterpret_cast<const char*>(row) + skip, end - skip);
  }

  pdl_wait();
  pdl_launch_dependents();

  float acc[kRowsPerWarp][MT];
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r)
#pragma unroll
    for (int m = 0; m < MT; ++m) acc[r][m] = 0.f;

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
#pragma unroll
        for (int m = 0; m < MT; ++m) {
          if (m < M) {
            float xf[8];
            unpack8(*reinterpret_cast<const uint4*>(x + int64_t(m) * K + int64_t(cs) * 8), xf);
#pragma unroll
            for (int r = 0; r < kRowsPerWarp; ++r)
#pragma unroll
              for (int j = 0; j < 8; ++j) acc[r][m] = fmaf(wf[r][j], xf[j], acc[r][m]);
          }
        }
      }
    }
  }

  finish_unit<MT, OutT, E, false>(acc, out, aux, M, N, unit, ks, kpart, warp, lane);
}

// gemv_kernel for weights too big for one wave of its blocks. Units: a warp group's kRowsPerWarp
// rows (per warp: its K share of them). The grid has at most one wave of blocks; block b's group g
// takes units (b + j·gridDim.x)·groups + g for j < units_per_group,
// and its lanes' load ring runs on from one unit's last chunks into the next unit's first, so a
// weight too big for one wave streams without blocks draining and starting between units. Every
// warp of a block makes the same number of steps (chunk steps past K and units past N are loads
// skipped and stores dropped), so the ks > 1 reduction's block barriers line up.
template <int MT, int kStages, typename OutT, Epi E = Epi::Store>
__global__ void __launch_bounds__(kThreads)
    gemv_stream_kernel(const bf16* __restrict__ x, const bf16* __restrict__ w, OutT* __restrict__ out, int M, int N,
                       int K, int ks, uint32_t pf_row_bytes, const bf16* __restrict__ aux, int units_per_group) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int kpart = warp % ks, group = warp / ks, groups = kWarps / ks;
  const int C = K >> 3;
  const int stride = 32 * ks;
  const int steps = (C + stride - 1) / stride;  // chunk steps per unit, the same for every warp
  const int c0 = kpart * 32 + lane;             // this lane's chunk at step 0
  auto unit_of = [&](int j) { return (int(blockIdx.x) + j * int(gridDim.x)) * groups + group; };
  auto rows_of = [&](int j, const bf16* (&rows)[kRowsPerWarp]) {
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) rows[r] = w + int64_t(weight_row<E>(unit_of(j), r, N)) * K;
  };

  // The refill cursor: unit j_fill, step k_fill, and its rows.
  int j_fill = 0, k_fill = 0;
  const bf16* fill_rows[kRowsPerWarp];
  rows_of(0, fill_rows);
  // Units past the weight's rows (the last block's share when the units do not divide evenly)
  // load nothing; their rows are clamped to valid memory anyway.
  auto unit_valid = [&](int j) {
    return E == Epi::GeluMul ? unit_of(j) * 2 < (N >> 1) : unit_of(j) * kRowsPerWarp < N;
  };
  auto fill = [&](uint4 (&dst)[kRowsPerWarp]) {
    const int c = c0 + k_fill * stride;
    const bool ok = j_fill < units_per_group && c < C && unit_valid(j_fill);
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) dst[r] = ok ? ld_weight(fill_rows[r] + int64_t(c) * 8) : make_uint4(0, 0, 0, 0);
    if (++k_fill == steps) {
      k_fill = 0;
      if (++j_fill < units_per_group) rows_of(j_fill, fill_rows);
    }
  };

  // ---- before the wait: weights only ----
  uint4 wb[kStages][kRowsPerWarp];
#pragma unroll
  for (int s = 0; s < kStages; ++s) fill(wb[s]);
  if (pf_row_bytes && kpart == 0 && lane < kRowsPerWarp && unit_of(0) * kRowsPerWarp + lane < N) {
    // The register loads above cover the first unit's first kStages·stride chunks.
    const uint32_t skip = uint32_t(kStages * stride * 16), row_bytes = uint32_t(K) * 2;
    const uint32_t end = min(pf_row_bytes, row_bytes);
    const bf16* row = w + int64_t(weight_row<E>(unit_of(0), lane, N)) * K;
    if (end > skip) prefetch_l2(reinterpret_cast<const char*>(row) + skip, end - skip);
  }

  pdl_wait();
  pdl_launch_dependents();

  float acc[kRowsPerWarp][MT];
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r)
#pragma unroll
    for (int m = 0; m < MT; ++m) acc[r][m] = 0.f;

  // The consume cursor: unit j, step k.
  int j = 0, k = 0;
  const int total = units_per_group * steps;
  for (int i = 0; i < total; i += kStages) {
#pragma unroll
    for (int s = 0; s < kStages; ++s) {
      if (i + s < total) {
        const int cs = c0 + k * stride;
        float wf[kRowsPerWarp][8];
#pragma unroll
        for (int r = 0; r < kRowsPerWarp; ++r) unpack8(wb[s][r], wf[r]);
        // Refill this stage kStages steps further on (possibly the next unit) before the
        // arithmetic, so the loads are in flight while it runs.
        fill(wb[s]);
        if (cs < C) {
#pragma unroll
          for (int m = 0; m < MT; ++m) {
            if (m < M) {
              float xf[8];
              unpack8(*reinterpret_cast<const uint4*>(x + int64_t(m) * K + int64_t(cs) * 8), xf);
#pragma unroll
              for (int r = 0; r < kRowsPerWarp; ++r)
#pragma unroll
                for (int e = 0; e < 8; ++e) acc[r][m] = fmaf(wf[r][e], xf[e], acc[r][m]);
            }
          }
        }
        if (++k == steps) {
          k = 0;
          finish_unit<MT, OutT, E, true>(acc, out, aux, M, N, unit_of(j++), ks, kpart, warp, lane);
        }
      }
    }
  }
}

// ---- tensor-core variant -------------------------------------------------------------------------
// For M above a few rows the FMA kernel above runs out of issue slots (64·M FMAs per 16-byte
// weight chunk per lane), so this one does the dot products with mma.sync m16n8k16: A = x (16
// rows m, rows >= M zero), B = w^T (k16 x n8: 8 weight rows per warp), f32 accumulators.
//
// The trick that keeps the loads 16 bytes wide: a dot product does not care in which order k is
// summed, so an mma's "logical" k may map to any actual k as long as A and B use the same map.
// Lane (g = lane/4, p = lane%4) loads the 16-byte chunk ch = base + p of weight row g and the same
// chunk of x rows g and g+8; its four bf16 pairs feed two mma k-steps (pairs 0,1 then 2,3). For
// every logical k the 8 lanes with the same p read the same actual k, which is all the fragment
// layout needs. Each accumulator ends complete for one (m, n): no shuffles.
constexpr int kMmaRowsPerWarp = 8;
constexpr int kMmaStages = 8;  // chunks each lane has in flight: 128 B

// kHigh: M > 8, so x rows g+8 are loaded too (otherwise they are zero).
template <bool kHigh, typename OutT>
__global__ void __launch_bounds__(kThreads) gemv_mma_kernel(const bf16* __restrict__ x, const bf16* __restrict__ w,
                                                            OutT* __restrict__ out, int M, int N, int K, int ks,
                                                            uint32_t pf_row_bytes) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, p = lane & 3;
  const int kpart = warp % ks, group = warp / ks, groups = kWarps / ks;
  const int row0 = (blockIdx.x * groups + group) * kMmaRowsPerWarp;
  const int C = K >> 3;
  const int stride = 4 * ks;  // chunks between a warp's consecutive k-steps
  const bf16* wrow = w + int64_t(min(row0 + g, N - 1)) * K;
  const uint4 zero = make_uint4(0, 0, 0, 0);

  // ---- before the wait: weights only ----
  int b = kpart * 4;  // warp-uniform chunk base; the lane's chunk is b + p
  uint4 wb[kMmaStages];
#pragma unroll
  for (int s = 0; s < kMmaStages; ++s) {
    const int ch = b + s * stride + p;
    wb[s] = ch < C ? ld_weight(wrow + int64_t(ch) * 8) : zero;
  }
  if (pf_row_bytes && kpart == 0 && p == 0 && row0 + g < N) {
    const uint32_t skip = uint32_t(kMmaStages * stride * 16), row_bytes = uint32_t(K) * 2;
    const uint32_t end = min(pf_row_bytes, row_bytes);
    if (end > skip) prefetch_l2(reinterpret_cast<const char*>(wrow) + skip, end - skip);
  }

  pdl_wait();
  pdl_launch_dependents();

  const bool lo = g < M, hi = kHigh && g + 8 < M;
  const bf16* xlo = x + int64_t(lo ? g : 0) * K;
  const bf16* xhi = x + int64_t(hi ? g + 8 : 0) * K;
  float acc[4] = {0.f, 0.f, 0.f, 0.f};
  for (; b < C; b += kMmaStages * stride) {
#pragma unroll
    for (int s = 0; s < kMmaStages; ++s) {
      const int bs = b + s * stride;
      if (bs < C) {  // warp-uniform: mma needs the whole warp
        const int ch = bs + p;
        const bool ok = ch < C;
        const uint4 xl = ok && lo ? *reinterpret_cast<const uint4*>(xlo + int64_t(ch) * 8) : zero;
        const uint4 xh = ok && hi ? *reinterpret_cast<const uint4*>(xhi + int64_t(ch) * 8) : zero;
        const uint4 wv = wb[s];
        const int cn = ch + kMmaStages * stride;
        wb[s] = cn < C ? ld_weight(wrow + int64_t(cn) * 8) : zero;
        const uint32_t a01[4] = {xl.x, xh.x, xl.y, xh.y}, a23[4] = {xl.z, xh.z, xl.w, xh.w};
        attn::mma_bf16_16816(acc, a01, wv.x, wv.y);
        attn::mma_bf16_16816(acc, a23, wv.z, wv.w);
      }
    }
  }

  if (ks > 1) {
    __shared__ float part[kWarps][32][4];
#pragma unroll
    for (int j = 0; j < 4; ++j) part[warp][lane][j] = acc[j];
    __syncthreads();
    if (kpart != 0) return;
    for (int q = 1; q < ks; ++q)
#pragma unroll
      for (int j = 0; j < 4; ++j) acc[j] += part[warp + q][lane][j];
  }

  // C fragment: acc[0..1] = (m g, n 2p..2p+1), acc[2..3] = (m g+8, same n).
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const int m = g + (j >> 1) * 8, n = row0 + 2 * p + (j & 1);
    if (m < M && n < N) out[int64_t(m) * N + n] = from_f32<OutT>(acc[j]);
  }
}

template <typename K>
int occupancy(K kernel) {
  int b = 0;
  GS_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, kernel, kThreads, 0));
  return std::max(b, 1);
}

bool gemv_stream_enabled() {
  static const bool v = [] {
    const char* e = std::getenv("GS_GEMV_STREAM");
    return !(e && e[0] == '0');
  }();
  return v;
}

int min_blocks_per_sm() {
  static const int v = [] {
    const char* e = std::getenv("GS_GEMV_MIN_BLOCKS_PER_SM");
    return e && *e ? std::max(1, std::atoi(e)) : 8;
  }();
  return v;
}

// Bytes of each weight row a block asks L2 to prefetch before its wait: the budget spread over the
// rows whose blocks can be resident at once (`resident_rows`, capped at N), 16-byte multiples.
uint32_t l2_prefetch_per_row(int64_t N, int64_t K, int64_t resident_rows) {
  if (g_l2_budget <= 0) return 0;
  const int64_t rows = std::max<int64_t>(std::min<int64_t>(N, resident_rows), 1);
  return uint32_t(std::min<int64_t>(K * 2, g_l2_budget / rows) & ~int64_t(15));
}

// N: weight rows (2I for GeluMul).
template <int MT, typename OutT, Epi E = Epi::Store>
void launch_t(const bf16* x, const bf16* w, OutT* out, int M, int N, int K, cudaStream_t stream,
              const bf16* aux = nullptr) {
  const int sms = sm_count();
  const int C = K / 8;
  // Split K inside the block while the grid has fewer than min_blocks_per_sm blocks per SM and each
  // lane keeps two chunks per row. 8 keeps the tail short on big weights: aiming at 2, 31B's o_proj
  // (336 blocks on 132 SMs) ran as 2-3 blocks per SM and lost to cuBLASLt; at 8 the whole 31B
  // batch-1 step went 16.82 -> 16.46 ms and E2B's stayed at 2.41 (H200, 2026-11-25; in the
  // standalone bench, 16 warps per SM had made E2B's qkv alone 3.2 -> 4.2 us).
  // GS_GEMV_MIN_BLOCKS_PER_SM for A/B runs.
  int ks = 1;
  auto blocks_for = [&](int k_split) {
    const int rows_per_block = (kWarps / k_split) * kRowsPerWarp;
    return (N + rows_per_block - 1) / rows_per_block;
  };
  while (ks < kWarps && blocks_for(ks) < min_blocks_per_sm() * sms && C >= 32 * (2 * ks) * 2) ks *= 2;
  const int blocks = blocks_for(ks);
  // 4 stages in flight only when the whole grid is resident at once with them: measured on the
  // H200, 4 stages took E2B's down from 7.2 to 6.1 us (one wave either way) but its gate_up from
  // 9.5 to 12.4 us (768 blocks: one wave at 2 stages, two at 4).
  static const int occ4 = MT <= 2 ? occupancy(gemv_kernel<MT, 4, OutT, E>) : 0;
  static const int occ2 = occupancy(gemv_kernel<MT, 2, OutT, E>);
  const bool deep = MT <= 2 && blocks <= occ4 * sms;
  auto kernel = deep ? gemv_kernel<MT, (MT <= 2 ? 4 : 2), OutT, E> : gemv_kernel<MT, 2, OutT, E>;
  const int blocks_per_sm = deep ? occ4 : occ2;
  const uint32_t pf = l2_prefetch_per_row(N, K, int64_t(blocks_per_sm) * sms * (kWarps / ks) * kRowsPerWarp);

  if constexpr (MT <= 2) {
    // Beyond one wave of 2-stage blocks, one and two rows stream: every warp group takes the same
    // number of units and the grid shrinks to the fewest blocks that cover them, so no block has a
    // unit more. GS_GEMV_STREAM=0 launches the waves instead (A/B runs).
    static const int occ_stream = occupancy(gemv_stream_kernel<MT, 2, OutT, E>);
    if (!deep && blocks > occ2 * sms && gemv_stream_enabled()) {
      const int units_per_group = (blocks + occ_stream * sms - 1) / (occ_stream * sms);
      const int grid = (blocks + units_per_group - 1) / units_per_group;
      launch_pdl("gemv_stream_kernel", gemv_stream_kernel<MT, 2, OutT, E>, dim3(grid), dim3(kThreads), 0, stream, x,
                 w, out, M, N, K, ks, pf, aux, units_per_group);
      return;
    }
  }
  launch_pdl("gemv_kernel", kernel, dim3(blocks), dim3(kThreads), 0, stream, x, w, out, M, N, K, ks, pf, aux);
}

// Off by default (kGemvMaxRows + 1): on the H200 the mma variant beat the FMA kernel from M = 4
// but lost to cuBLASLt at every decode shape there (docs/perf/kernels.md); it stays, tested, as
// the starting point for M 2-16.
int g_mma_min_rows = kGemvMaxRows + 1;

template <bool kHigh, typename OutT>
void launch_mma(const bf16* x, const bf16* w, OutT* out, int M, int N, int K, cudaStream_t stream) {
  auto kernel = gemv_mma_kernel<kHigh, OutT>;
  static const int blocks_per_sm = occupancy(kernel);
  const int sms = sm_count();
  const int C = K / 8;
  int ks = 1;
  auto blocks_for = [&](int k_split) {
    const int rows_per_block = (kWarps / k_split) * kMmaRowsPerWarp;
    return (N + rows_per_block - 1) / rows_per_block;
  };
  // Same rule as the FMA kernel: split K in the block while there are under 16 warps per SM
  // and every warp keeps at least one 4-chunk k-step.
  while (ks < kWarps && blocks_for(ks) * kWarps < 16 * sms && C >= 4 * (2 * ks)) ks *= 2;
  const uint32_t pf = l2_prefetch_per_row(N, K, int64_t(blocks_per_sm) * sms * (kWarps / ks) * kMmaRowsPerWarp);
  launch_pdl("gemv_mma_kernel", kernel, dim3(blocks_for(ks)), dim3(kThreads), 0, stream, x, w, out, M, N, K, ks, pf);
}

// The FMA kernel at the smallest compile-time row bound MT >= M. The fused epilogues run on it only
// (the tensor-core variant is off by default).
template <typename OutT, Epi E>
void launch_fma(const bf16* x, const bf16* w, OutT* out, int M, int N, int K, const bf16* aux, cudaStream_t stream) {
  if (M <= 1) launch_t<1, OutT, E>(x, w, out, M, N, K, stream, aux);
  else if (M <= 2) launch_t<2, OutT, E>(x, w, out, M, N, K, stream, aux);
  else if (M <= 4) launch_t<4, OutT, E>(x, w, out, M, N, K, stream, aux);
  else if (M <= 8) launch_t<8, OutT, E>(x, w, out, M, N, K, stream, aux);
  else launch_t<16, OutT, E>(x, w, out, M, N, K, stream, aux);
}

template <typename OutT>
void dispatch_m(const bf16* x, const bf16* w, OutT* out, int M, int N, int K, cudaStream_t stream) {
  if (M >= g_mma_min_rows) {
    if (M <= 8) launch_mma<false>(x, w, out, M, N, K, stream);
    else launch_mma<true>(x, w, out, M, N, K, stream);
    return;
  }
  launch_fma<OutT, Epi::Store>(x, w, out, M, N, K, nullptr, stream);
}

}  // namespace

bool gemv_supported(int64_t m, int64_t n, int64_t k, DType out_dtype, const void* x, const void* w) {
  return m >= 1 && m <= kGemvMaxRows && n >= 1 && n < (int64_t(1) << 31) && k >= 8 && k % 8 == 0 &&
         k < (int64_t(1) << 28) && (out_dtype == DType::BF16 || out_dtype == DType::F32) && aligned16(x) &&
         aligned16(w);
}

void launch_gemv(const void* x, const void* w, void* out, DType out_dtype, int64_t m, int64_t n, int64_t k,
                 cudaStream_t stream) {
  require(gemv_supported(m, n, k, out_dtype, x, w), "gemv: unsupported operands M=", m, " N=", n, " K=", k,
          " out ", dtype_name(out_dtype), " (M <= ", kGemvMaxRows, ", K % 8 == 0, 16-byte aligned x and w)");
  const bf16* xb = static_cast<const bf16*>(x);
  const bf16* wb = static_cast<const bf16*>(w);
  if (out_dtype == DType::F32) dispatch_m(xb, wb, static_cast<float*>(out), int(m), int(n), int(k), stream);
  else dispatch_m(xb, wb, static_cast<bf16*>(out), int(m), int(n), int(k), stream);
}

void launch_gemv_gelu_mul(const void* x, const void* w, void* out, int64_t m, int64_t inter, int64_t k,
                          cudaStream_t stream) {
  require(gemv_supported(m, 2 * inter, k, DType::BF16, x, w), "gemv_gelu_mul: unsupported operands M=", m,
          " I=", inter, " K=", k);
  launch_fma<bf16, Epi::GeluMul>(static_cast<const bf16*>(x), static_cast<const bf16*>(w), static_cast<bf16*>(out),
                                 int(m), int(2 * inter), int(k), nullptr, stream);
}

void launch_gemv_gelu_mul_aux(const void* x, const void* w, const void* aux, void* out, int64_t m, int64_t n,
                              int64_t k, cudaStream_t stream) {
  require(gemv_supported(m, n, k, DType::BF16, x, w) && aux, "gemv_gelu_mul_aux: unsupported operands M=", m,
          " N=", n, " K=", k);
  launch_fma<bf16, Epi::GeluMulAux>(static_cast<const bf16*>(x), static_cast<const bf16*>(w),
                                    static_cast<bf16*>(out), int(m), int(n), int(k), static_cast<const bf16*>(aux),
                                    stream);
}

void gemv_set_l2_prefetch_budget(int64_t bytes) { g_l2_budget = bytes; }
void gemv_set_mma_min_rows(int m) { g_mma_min_rows = m; }

}  // namespace gs::cuda
