// The MoE grouped GEMM on mma.sync (grouped_gemm.h, launch_grouped_gemm_mma), in two tile shapes:
//   16 rows (decode: a few routed rows per expert, every active expert's weights streamed once):
//     by 64 weight rows, the block's 4 warps 16 each (two n8 fragments), all 16 rows (one m16);
//   64 rows (prefill): by 128 weight rows, 8 warps as 2 x 4, each 32 rows (two m16) by 32 weight
//     rows (four n8).
// A tile is rows of one expert by a block of weight rows. The block streams its weight rows and its
// rows of A through a cp.async ring of 64-wide K slices (4 stages of 10 KB, or 3 of 24 KB) in swizzled
// shared memory, and the warps read fragments with ldmatrix. Rows past the expert's count are zero.
// With kGeluMul (an MoE gate_up: gate rows [0, N/2), up rows [N/2, N)) each warp's weight rows are
// gate rows and the up rows of the same columns, so the epilogue writes gelu_tanh(g)·u from the
// f32 accumulators (rounded once, to bf16: the down GEMM's A operand) and no [rows, N]
// intermediate exists.
//
// The cp.async ring keeps several K slices in flight, which a register-staged K step cannot
// (docs/kernel-policy.md, "MoE"). The FMA GEMV path (moe_gemv.cu) keeps batch 1-4: from a few rows
// per expert it is ALU-bound.
#include <cstdlib>

#include "kernels/cuda/attention_mma.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_math.cuh"
#include "kernels/cuda/grouped_gemm.h"
#include "kernels/cuda/launch_util.h"

namespace gs::cuda {
namespace {

constexpr int BK = 64;
constexpr int kChunksPerRow = BK / 8;  // 16-byte chunks of a K slice row

// A tile of BM rows by BN weight rows.
template <int BM, int BN>
struct Tile {
  static constexpr int WM = BM == 16 ? 16 : 32;                 // rows per warp
  static constexpr int WN = BM == 16 ? 16 : 32;                 // weight rows per warp
  static constexpr int MT = WM / 16, NT = WN / 8;               // m16 and n8 fragments per warp
  static constexpr int kWarpsN = BN / WN;
  static constexpr int kThreads = 32 * (BM / WM) * kWarpsN;
  static constexpr int kStages = BM == 16 ? 4 : 3;
  static constexpr int kStageElems = (BM + BN) * BK;
  static constexpr int kSmemBytes = kStages * kStageElems * 2;
  static constexpr int kRowsPerPass = kThreads / kChunksPerRow;  // rows one cp.async per thread covers
  static constexpr int kAChunks = BM / kRowsPerPass, kBChunks = BN / kRowsPerPass;
};

// Rows of a slice are 128 bytes: chunk c of row r sits at c ^ (r % 8), so the 8 row addresses of
// an ldmatrix fall in 8 different bank groups.
__device__ __forceinline__ int swz(int r, int c) { return r * BK + ((c ^ (r & 7)) << 3); }

template <int BM, int BN, bool kGeluMul>
__global__ void __launch_bounds__(Tile<BM, BN>::kThreads) grouped_gemm_mma_kernel(GroupedGemmArgs g) {
  using L = Tile<BM, BN>;
  extern __shared__ __align__(128) bf16 smem[];
  pdl_enter();
  const int tile = blockIdx.y;
  const int e = g.tile_expert[tile];
  if (e < 0) return;
  const int row0 = g.tile_row0[tile];
  const int rows = min(BM, g.group_end[e] - row0);
  if (rows <= 0) return;
  // kGeluMul: the block's BN/2 output columns start at j0; otherwise its BN weight rows at n0.
  const int n0 = blockIdx.x * BN, j0 = blockIdx.x * (BN / 2), I = g.n / 2;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wm = warp / L::kWarpsN, wn = warp % L::kWarpsN;

  const bf16* A = static_cast<const bf16*>(g.a);
  const bf16* B = static_cast<const bf16*>(g.b) + int64_t(e) * g.n * g.k;

  // What each thread copies per stage, at a fixed chunk column cc: rows rr + kRowsPerPass·i of A
  // (i < kAChunks) and of B (i < kBChunks), so the row pointers are computed once.
  constexpr int P = L::kRowsPerPass;
  const int cc = tid % kChunksPerRow, rr = tid / kChunksPerRow;
  const bf16* a_row[L::kAChunks];
  bool a_ok[L::kAChunks];
#pragma unroll
  for (int i = 0; i < L::kAChunks; ++i) {
    const int r = rr + P * i;
    a_ok[i] = r < rows;
    const int src = a_ok[i] ? (g.gather ? g.gather[row0 + r] / g.gather_div : row0 + r) : 0;
    a_row[i] = A + int64_t(src) * g.k;
  }
  const bf16* b_row[L::kBChunks];
  bool b_ok[L::kBChunks];
#pragma unroll
  for (int i = 0; i < L::kBChunks; ++i) {
    const int s = rr + P * i;  // shared row s belongs to warp column s / WN
    int r;
    if constexpr (kGeluMul) {
      // A warp column's first WN/2 rows are gate rows of its WN/2 columns, the rest their up rows.
      const int idx = s % L::WN, j = j0 + (s / L::WN) * (L::WN / 2) + idx % (L::WN / 2);
      b_ok[i] = j < I;
      r = idx < L::WN / 2 ? j : I + j;
    } else {
      r = n0 + s;
      b_ok[i] = r < g.n;
    }
    b_row[i] = B + int64_t(b_ok[i] ? r : 0) * g.k;
  }
  const int KT = (g.k + BK - 1) / BK;
  auto load_stage = [&](int slot, int kt) {
    bf16* As = smem + slot * L::kStageElems;
    bf16* Bs = As + BM * BK;
    const int k = kt * BK + cc * 8;
    const bool in_k = k < g.k;
#pragma unroll
    for (int i = 0; i < L::kAChunks; ++i)
      attn::cp_async16(As + swz(rr + P * i, cc), a_row[i] + (in_k ? k : 0), a_ok[i] && in_k);
#pragma unroll
    for (int i = 0; i < L::kBChunks; ++i)
      attn::cp_async16(Bs + swz(rr + P * i, cc), b_row[i] + (in_k ? k : 0), b_ok[i] && in_k);
  };

#pragma unroll
  for (int s = 0; s < L::kStages - 1; ++s) {
    if (s < KT) load_stage(s, s);
    attn::cp_async_commit();
  }

  float acc[L::MT][L::NT][4] = {};
  // ldmatrix lanes: matrix q = lane / 8, row lane % 8 of it.
  const int q = lane >> 3, lr = lane & 7;
  const int a_r = wm * L::WM + lr + (q & 1) * 8, a_dc = q >> 1;  // (rows 0-7 | 8-15) x (k 0-7 | 8-15)
  const int b_r = wn * L::WN + lr + (q >> 1) * 8, b_dc = q & 1;  // (n 0-7 | 8-15) x (k 0-7 | 8-15)
  for (int kt = 0; kt < KT; ++kt) {
    attn::cp_async_wait<L::kStages - 2>();
    __syncthreads();  // slice kt has landed for every thread; slot (kt - 1) % kStages is free
    if (kt + L::kStages - 1 < KT) load_stage((kt + L::kStages - 1) % L::kStages, kt + L::kStages - 1);
    attn::cp_async_commit();
    const bf16* As = smem + (kt % L::kStages) * L::kStageElems;
    const bf16* Bs = As + BM * BK;
#pragma unroll
    for (int kk = 0; kk < BK / 16; ++kk) {
      uint32_t a[L::MT][4], b[L::NT / 2][4];
#pragma unroll
      for (int mt = 0; mt < L::MT; ++mt) attn::ldmatrix_x4(a[mt], As + swz(a_r + mt * 16, 2 * kk + a_dc));
#pragma unroll
      for (int np = 0; np < L::NT / 2; ++np) attn::ldmatrix_x4(b[np], Bs + swz(b_r + np * 16, 2 * kk + b_dc));
#pragma unroll
      for (int mt = 0; mt < L::MT; ++mt)
#pragma unroll
        for (int nt = 0; nt < L::NT; ++nt)
          attn::mma_bf16_16816(acc[mt][nt], a[mt], b[nt / 2][2 * (nt % 2)], b[nt / 2][2 * (nt % 2) + 1]);
    }
  }
  attn::cp_async_wait<0>();

  // C fragments: acc[mt][nt][0..1] = (row lane/4 of m16 tile mt, n 2(lane%4) + 0..1 of n8 tile
  // nt), acc[..][2..3] the row 8 further.
  bf16* C = static_cast<bf16*>(g.c);
  const int gr = lane >> 2, gc = (lane & 3) * 2;
#pragma unroll
  for (int mt = 0; mt < L::MT; ++mt) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int m = wm * L::WM + mt * 16 + gr + 8 * h;
      if (m >= rows) continue;
      if constexpr (kGeluMul) {
        // n8 tiles 0 .. NT/2-1 hold g, the next NT/2 the u of the same columns.
#pragma unroll
        for (int nt = 0; nt < L::NT / 2; ++nt) {
          const int j = j0 + wn * (L::WN / 2) + nt * 8 + gc;
          if (j >= I) continue;  // j is even and I % 4 == 0: the pair is in range
          const float* gv = acc[mt][nt];
          const float* uv = acc[mt][nt + L::NT / 2];
          *reinterpret_cast<__nv_bfloat162*>(C + int64_t(row0 + m) * I + j) = __floats2bfloat162_rn(
              gelu_tanh(gv[2 * h]) * uv[2 * h], gelu_tanh(gv[2 * h + 1]) * uv[2 * h + 1]);
        }
      } else {
#pragma unroll
        for (int nt = 0; nt < L::NT; ++nt) {
          const int n = n0 + wn * L::WN + nt * 8 + gc;
          if (n >= g.n) continue;  // n is even and N % 8 == 0: the pair is in range
          *reinterpret_cast<__nv_bfloat162*>(C + int64_t(row0 + m) * g.n + n) =
              __floats2bfloat162_rn(acc[mt][nt][2 * h], acc[mt][nt][2 * h + 1]);
        }
      }
    }
  }
}

template <int BM, int BN>
void launch_tile(const GroupedGemmArgs& args, bool gelu_mul, cudaStream_t stream) {
  using L = Tile<BM, BN>;
  allow_smem(grouped_gemm_mma_kernel<BM, BN, true>, L::kSmemBytes);
  allow_smem(grouped_gemm_mma_kernel<BM, BN, false>, L::kSmemBytes);
  // kGeluMul: BN/2 output columns (BN weight rows) per block.
  const int cols = gelu_mul ? args.n / 2 : args.n, per_block = gelu_mul ? BN / 2 : BN;
  const dim3 grid(unsigned((cols + per_block - 1) / per_block), unsigned(args.max_tiles));
  auto kernel = gelu_mul ? grouped_gemm_mma_kernel<BM, BN, true> : grouped_gemm_mma_kernel<BM, BN, false>;
  launch_pdl("grouped_gemm_mma", kernel, grid, dim3(L::kThreads), size_t(L::kSmemBytes), stream, args);
}

// Weight rows per 64-row tile, 64 or 128 (the policy's moe.mma64_bn; A/B runs).
int mma64_bn() { return kernel_policy().moe.mma64_bn; }

}  // namespace

void launch_grouped_gemm_mma(const GroupedGemmArgs& args, int tile_m, bool gelu_mul, cudaStream_t stream) {
  if (args.max_tiles == 0 || args.n == 0) return;
  require(args.n % 8 == 0 && args.k % 8 == 0, "grouped_gemm_mma: N ", args.n, " and K ", args.k,
          " must be multiples of 8");
  require(tile_m == 16 || tile_m == 64, "grouped_gemm_mma: tiles of ", tile_m, " rows; 16 or 64 are built");
  if (tile_m == 16) launch_tile<16, 64>(args, gelu_mul, stream);
  else if (mma64_bn() == 64) launch_tile<64, 64>(args, gelu_mul, stream);
  else launch_tile<64, 128>(args, gelu_mul, stream);
}

}  // namespace gs::cuda
