// MoE experts for decode-sized batches as GEMVs. At batch 1 each of the 8 chosen experts streams
// 12 MB of weights for one row, so the work is a memory copy with a little arithmetic: what
// matters is many blocks per expert, 16-byte loads with several in flight per lane, and reading
// every weight byte once. Four launches:
//   plan     one block: rows per expert, the list of active experts (ascending), a permutation
//            grouping the routed rows (t, j) by expert
//   gate_up  grid (column block, active expert): a warp computes column j of g and of u for all
//            of the expert's rows (from shared memory, kRows at a time) and stores
//            act = gelu_tanh(g) · u, so the [T·k, 2I] intermediate never exists
//   down     grid (column block, active expert): a warp computes kDownCols output columns of
//            y = act · downᵀ for the expert's rows, each column's full dot product in one warp
//            (no split-K, so nothing needs ordering)
//   combine  per token, Σ w · y in ascending expert order (moe_combine.cuh)
// act and y are held in f32 but rounded to bf16, where the grouped GEMM (the path from five tokens
// on) rounds them: g and u stay f32 in both, so a token's experts compute the same function on
// either path up to summation order (the golden parity's decode mode runs this path, its prefill
// mode the other).
// Grids cover every expert slot that could be active (min(E, T·k)); slots past the count the plan
// found return at once, so nothing waits for the host and the step can be a CUDA graph.
#include <algorithm>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launch_util.h"
#include "kernels/cuda/moe_combine.cuh"
#include "kernels/cuda/moe_gemv.cuh"
#include "kernels/cuda/scratch_arena.h"

namespace gs::cuda {
namespace {

constexpr int kWarps = 8;      // warps per block of the gate_up and down kernels
constexpr int kRows = 8;       // routed rows of one expert held in shared memory per pass
constexpr int kUpBatch = 4;    // gate_up: 16-byte chunks per weight row each lane has in flight
constexpr int kDownCols = 4;   // down: output columns per warp
constexpr int kDownBatch = 3;  // down: 16-byte chunks per column each lane has in flight
constexpr int kPlanThreads = 256;
// No L2 prefetch of the weight rows before the shared-memory fill: its registers cost a block per
// SM, more than the overlap gains (docs/kernel-policy.md, "MoE").

struct Scratch {
  int *active, *row_begin, *row_count, *n_active, *perm, *pos_of;
  float *act, *y;
};

Scratch carve(void* base, int64_t T, int64_t k, int64_t E, int64_t H, int64_t I, size_t* used) {
  ScratchCarver c(base);
  const int64_t TK = T * k;
  Scratch s{};
  s.active = c.take<int>(size_t(E));
  s.row_begin = c.take<int>(size_t(E));
  s.row_count = c.take<int>(size_t(E));
  s.n_active = c.take<int>(1);
  s.perm = c.take<int>(size_t(TK));
  s.pos_of = c.take<int>(size_t(TK));
  s.act = c.take<float>(size_t(TK * I));
  s.y = c.take<float>(size_t(TK * H));
  if (used) *used = c.used();
  return s;
}

__device__ __forceinline__ void bf16x8(const uint4& raw, float (&f)[8]) {
  const __nv_bfloat162* p = reinterpret_cast<const __nv_bfloat162*>(&raw);
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const float2 v = __bfloat1622float2(p[q]);
    f[2 * q] = v.x, f[2 * q + 1] = v.y;
  }
}

__device__ __forceinline__ float dot8(const float (&a)[8], const float (&b)[8]) {
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < 8; ++i) s += a[i] * b[i];
  return s;
}

// Counts per expert in shared memory, a warp scan for row offsets and active-slot numbers, then
// the permutation. Rows of one expert land in any order; each row is computed independently and
// the combine sums by expert id, so the order changes no result.
__global__ void __launch_bounds__(kPlanThreads) plan_kernel(const int* __restrict__ ids, int TK, int E, Scratch s) {
  pdl_enter();
  extern __shared__ int sh[];  // [E] counts, [E] cursors
  int* cnt = sh;
  int* cur = sh + E;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int e = threadIdx.x; e < E; e += blockDim.x) cnt[e] = 0;
  __syncthreads();
  for (int i = threadIdx.x; i < TK; i += blockDim.x) {
    const int e = ids[i];
    if (e >= 0 && e < E) atomicAdd(&cnt[e], 1);
  }
  __syncthreads();
  if (warp == 0) {
    int rows = 0, slots = 0;
    for (int e0 = 0; e0 < E; e0 += 32) {
      const int e = e0 + lane;
      const int c = e < E ? cnt[e] : 0;
      int incl = c;
#pragma unroll
      for (int o = 1; o < 32; o <<= 1) {
        const int v = __shfl_up_sync(0xffffffffu, incl, o);
        if (lane >= o) incl += v;
      }
      const unsigned busy = __ballot_sync(0xffffffffu, c > 0);
      const int begin = rows + incl - c;
      if (e < E) cur[e] = begin;
      if (c > 0) {
        const int slot = slots + __popc(busy & ((1u << lane) - 1u));
        s.active[slot] = e, s.row_begin[slot] = begin, s.row_count[slot] = c;
      }
      rows += __shfl_sync(0xffffffffu, incl, 31);
      slots += __popc(busy);
    }
    if (lane == 0) *s.n_active = slots;
  }
  __syncthreads();
  for (int i = threadIdx.x; i < TK; i += blockDim.x) {
    const int e = ids[i];
    if (e >= 0 && e < E) {
      const int p = atomicAdd(&cur[e], 1);
      s.perm[p] = i;
      s.pos_of[i] = p;
    } else {
      s.pos_of[i] = -1;
    }
  }
}

// act[p, j] = gelu_tanh(x[tok(p)] · gate_up[e, j]) · (x[tok(p)] · gate_up[e, I + j]).
// rows_cap (<= kRows): routed rows per pass that shared memory was sized for.
__global__ void __launch_bounds__(kWarps * 32) gate_up_kernel(MoeGemvArgs a, Scratch s, int rows_cap) {
  pdl_enter();
  extern __shared__ __align__(16) unsigned char smem_raw[];
  uint4* xs = reinterpret_cast<uint4*>(smem_raw);  // [kRows][H / 8] chunks of 8 bf16
  const int slot = blockIdx.y;
  if (slot >= *s.n_active) return;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int e = s.active[slot], rb = s.row_begin[slot], rc = s.row_count[slot];
  const int j = blockIdx.x * kWarps + warp;
  const int chunks = a.H / 8;
  const uint4* wg = reinterpret_cast<const uint4*>(a.gate_up + (int64_t(e) * 2 * a.I + j) * a.H);
  const uint4* wu = wg + int64_t(a.I) * chunks;

  for (int g0 = 0; g0 < rc; g0 += rows_cap) {
    const int nr = min(rows_cap, rc - g0);
    __syncthreads();  // the previous pass has finished reading xs
    for (int idx = threadIdx.x; idx < nr * chunks; idx += blockDim.x) {
      const int r = idx / chunks, c = idx - r * chunks;
      const int tok = s.perm[rb + g0 + r] / a.k;
      xs[idx] = reinterpret_cast<const uint4*>(a.x + int64_t(tok) * a.H)[c];
    }
    __syncthreads();
    if (j >= a.I) continue;  // still takes part in the barriers of later passes

    float ag[kRows] = {}, au[kRows] = {};
    for (int c0 = lane; c0 < chunks; c0 += 32 * kUpBatch) {
      uint4 rg[kUpBatch], ru[kUpBatch];
#pragma unroll
      for (int b = 0; b < kUpBatch; ++b) {  // every load of the batch before any arithmetic
        const int c = c0 + 32 * b;
        const bool ok = c < chunks;
        rg[b] = ok ? __ldg(wg + c) : make_uint4(0, 0, 0, 0);
        ru[b] = ok ? __ldg(wu + c) : make_uint4(0, 0, 0, 0);
      }
#pragma unroll
      for (int b = 0; b < kUpBatch; ++b) {
        const int c = c0 + 32 * b;
        if (c >= chunks) break;
        float g8[8], u8[8];
        bf16x8(rg[b], g8);
        bf16x8(ru[b], u8);
#pragma unroll
        for (int r = 0; r < kRows; ++r) {
          if (r >= nr) break;
          float x8[8];
          bf16x8(xs[r * chunks + c], x8);
          ag[r] += dot8(x8, g8);
          au[r] += dot8(x8, u8);
        }
      }
    }
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      if (r >= nr) break;
      const float g = warp_sum(ag[r]), u = warp_sum(au[r]);
      if (lane == 0) s.act[int64_t(rb + g0 + r) * a.I + j] = rnd<bf16>(gelu_tanh(g) * u);
    }
  }
}

// y[p, n] = act[p] · down[e, n] for kDownCols consecutive n per warp (H % 8 == 0, so a warp's
// columns are all in range or all out).
__global__ void __launch_bounds__(kWarps * 32) down_kernel(MoeGemvArgs a, Scratch s, int rows_cap) {
  pdl_enter();
  extern __shared__ __align__(16) unsigned char smem_raw[];
  float* as = reinterpret_cast<float*>(smem_raw);  // [kRows][I]
  const int slot = blockIdx.y;
  if (slot >= *s.n_active) return;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int e = s.active[slot], rb = s.row_begin[slot], rc = s.row_count[slot];
  const int n0 = (blockIdx.x * kWarps + warp) * kDownCols;
  const int chunks = a.I / 8;
  const uint4* wd = reinterpret_cast<const uint4*>(a.down + (int64_t(e) * a.H + n0) * a.I);

  for (int g0 = 0; g0 < rc; g0 += rows_cap) {
    const int nr = min(rows_cap, rc - g0);
    __syncthreads();
    // The expert's rows are consecutive in act: one contiguous copy.
    const float4* src = reinterpret_cast<const float4*>(s.act + int64_t(rb + g0) * a.I);
    for (int idx = threadIdx.x; idx < nr * a.I / 4; idx += blockDim.x) reinterpret_cast<float4*>(as)[idx] = src[idx];
    __syncthreads();
    if (n0 >= a.H) continue;

    float acc[kRows][kDownCols] = {};
    for (int c0 = lane; c0 < chunks; c0 += 32 * kDownBatch) {
      uint4 raw[kDownBatch][kDownCols];
#pragma unroll
      for (int b = 0; b < kDownBatch; ++b) {
        const int c = c0 + 32 * b;
#pragma unroll
        for (int d = 0; d < kDownCols; ++d)
          raw[b][d] = c < chunks ? __ldg(wd + int64_t(d) * chunks + c) : make_uint4(0, 0, 0, 0);
      }
#pragma unroll
      for (int b = 0; b < kDownBatch; ++b) {
        const int c = c0 + 32 * b;
        if (c >= chunks) break;
        float w8[kDownCols][8];
#pragma unroll
        for (int d = 0; d < kDownCols; ++d) bf16x8(raw[b][d], w8[d]);
#pragma unroll
        for (int r = 0; r < kRows; ++r) {
          if (r >= nr) break;
          const float4* ap = reinterpret_cast<const float4*>(as + r * a.I + c * 8);
          const float4 lo = ap[0], hi = ap[1];
          const float a8[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
#pragma unroll
          for (int d = 0; d < kDownCols; ++d) acc[r][d] += dot8(a8, w8[d]);
        }
      }
    }
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      if (r >= nr) break;
      float out[kDownCols];
#pragma unroll
      for (int d = 0; d < kDownCols; ++d) out[d] = rnd<bf16>(warp_sum(acc[r][d]));
      if (lane == 0) {
        static_assert(kDownCols == 4, "one float4 store per row");
        *reinterpret_cast<float4*>(s.y + int64_t(rb + g0 + r) * a.H + n0) = make_float4(out[0], out[1], out[2], out[3]);
      }
    }
  }
}

}  // namespace

size_t moe_gemv_scratch_bytes(int64_t T, int64_t k, int64_t E, int64_t H, int64_t I) {
  size_t used = 0;
  carve(nullptr, T, k, E, H, I, &used);
  return used;
}

template <typename OutT>
void launch_moe_gemv(const MoeGemvArgs& a, OutT* out, void* scratch, cudaStream_t stream, const MoeSum* sum) {
  const int TK = a.T * a.k;
  Scratch s = carve(scratch, a.T, a.k, a.E, a.H, a.I, nullptr);
  const unsigned slots = unsigned(std::min(a.E, TK));  // experts that can be active
  // Shared memory for min(kRows, T) rows per pass: an expert has at most T rows when a token's k
  // experts are distinct (as the router makes them); more rows only take more passes.
  const int rows_smem = std::min(kRows, a.T);

  launch_pdl("plan_kernel", plan_kernel, 1, kPlanThreads, size_t(2 * a.E) * sizeof(int), stream, a.ids, TK, a.E, s);
  GS_CUDA_LAUNCHED("moe gemv plan");

  const size_t up_smem = size_t(rows_smem) * size_t(a.H) * sizeof(bf16);
  allow_smem(gate_up_kernel, up_smem);
  launch_pdl("gate_up_kernel", gate_up_kernel, dim3(unsigned((a.I + kWarps - 1) / kWarps), slots), kWarps * 32, up_smem,
             stream, a, s, rows_smem);
  GS_CUDA_LAUNCHED("moe gemv gate_up");

  const size_t down_smem = size_t(rows_smem) * size_t(a.I) * sizeof(float);
  allow_smem(down_kernel, down_smem);
  const int cols_per_block = kWarps * kDownCols;
  launch_pdl("down_kernel", down_kernel, dim3(unsigned((a.H + cols_per_block - 1) / cols_per_block), slots),
             kWarps * 32, down_smem, stream, a, s, rows_smem);
  GS_CUDA_LAUNCHED("moe gemv down");

  launch_moe_combine(s.y, s.pos_of, a.ids, a.weights, a.k, a.T, a.H, out, sum, stream);
}

template void launch_moe_gemv<float>(const MoeGemvArgs&, float*, void*, cudaStream_t, const MoeSum*);
template void launch_moe_gemv<bf16>(const MoeGemvArgs&, bf16*, void*, cudaStream_t, const MoeSum*);

}  // namespace gs::cuda
