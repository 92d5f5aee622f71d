// The grouped GEMM for decode-sized MoE batches (grouped_gemm.h, launch_grouped_gemm_skinny): a
// few routed rows per expert, every active expert's weights streamed once. A tile is 16 rows of
// one expert (the m16 of mma.sync m16n8k16) by 64 weight rows; a block of 4 warps streams its 64
// weight rows through a 4-stage cp.async ring of 64-wide K slices, each warp multiplying 16 of
// them (two n8 fragments) with fragments read by ldmatrix. Rows past the expert's count are zero.
// With kGeluMul (an MoE gate_up: gate rows [0, N/2), up rows [N/2, N)) a warp's two fragments are
// 8 gate rows and the 8 up rows of the same columns, so the epilogue writes gelu_tanh(g)·u from
// the f32 accumulators (rounded once, to bf16: the down GEMM's A operand) and no [rows, N]
// intermediate exists.
//
// Why not the 64 x 64 WMMA kernel (grouped_gemm.cu) here: at ~4-16 rows per expert three quarters
// of its tile is padding, and its one register-staged K step in flight left it at ~35% of DRAM
// bandwidth on 26B-A4B at 128 tokens (ncu, H200). Nor the FMA GEMV path (moe_gemv.cu): from a few
// rows per expert it is ALU-bound.
#include "kernels/cuda/attention_mma.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_math.cuh"
#include "kernels/cuda/grouped_gemm.h"
#include "kernels/cuda/launch_util.h"

namespace gs::cuda {
namespace {

constexpr int BM = kGroupedSkinnyTileM;  // 16
constexpr int BN = 64, BK = 64;
constexpr int kStages = 4;
constexpr int kThreads = 128;
constexpr int kChunksPerRow = BK / 8;  // 16-byte chunks of a K slice row
constexpr int kStageElems = (BM + BN) * BK;
constexpr int kSmemBytes = kStages * kStageElems * 2;  // 40 KB

// Rows of a slice are 128 bytes: chunk c of row r sits at c ^ (r % 8), so the 8 row addresses of
// an ldmatrix fall in 8 different bank groups.
__device__ __forceinline__ int swz(int r, int c) { return r * BK + ((c ^ (r & 7)) << 3); }

template <bool kGeluMul>
__global__ void __launch_bounds__(kThreads) grouped_gemm_skinny_kernel(GroupedGemmArgs g) {
  extern __shared__ __align__(128) bf16 smem[];
  pdl_enter();
  const int tile = blockIdx.y;
  const int e = g.tile_expert[tile];
  if (e < 0) return;
  const int row0 = g.tile_row0[tile];
  const int rows = min(BM, g.group_end[e] - row0);
  if (rows <= 0) return;
  // kGeluMul: the block's 32 output columns start at j0; otherwise its 64 weight rows at n0.
  const int n0 = blockIdx.x * BN, j0 = blockIdx.x * (BN / 2), I = g.n / 2;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;

  const bf16* A = static_cast<const bf16*>(g.a);
  const bf16* B = static_cast<const bf16*>(g.b) + int64_t(e) * g.n * g.k;

  // What each thread copies per stage: one chunk of A (16 rows x 8 chunks = 128) and four of B
  // (64 x 8 = 512), at a fixed chunk column, so the row pointers are computed once.
  const int cc = tid % kChunksPerRow;
  const int ar = tid / kChunksPerRow;  // 0..15
  const bool a_ok = ar < rows;
  const int a_src = a_ok ? (g.gather ? g.gather[row0 + ar] / g.gather_div : row0 + ar) : 0;
  const bf16* a_row = A + int64_t(a_src) * g.k;
  const bf16* b_row[4];
  bool b_ok[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    // Shared row ar + 16i belongs to warp i. kGeluMul: its rows 0-7 are gate rows of columns
    // j0 + 8i + 0..7, rows 8-15 the up rows of the same columns.
    int r;
    if constexpr (kGeluMul) {
      const int j = j0 + 8 * i + (ar & 7);
      b_ok[i] = j < I;
      r = ar < 8 ? j : I + j;
    } else {
      r = n0 + ar + 16 * i;
      b_ok[i] = r < g.n;
    }
    b_row[i] = B + int64_t(b_ok[i] ? r : 0) * g.k;
  }
  const int KT = (g.k + BK - 1) / BK;
  auto load_stage = [&](int slot, int kt) {
    bf16* As = smem + slot * kStageElems;
    bf16* Bs = As + BM * BK;
    const int k = kt * BK + cc * 8;
    const bool in_k = k < g.k;
    attn::cp_async16(As + swz(ar, cc), a_row + (in_k ? k : 0), a_ok && in_k);
#pragma unroll
    for (int i = 0; i < 4; ++i) attn::cp_async16(Bs + swz(ar + 16 * i, cc), b_row[i] + (in_k ? k : 0), b_ok[i] && in_k);
  };

#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < KT) load_stage(s, s);
    attn::cp_async_commit();
  }

  float acc[2][4] = {};
  // ldmatrix lanes: matrix q = lane / 8, row lane % 8 of it.
  const int q = lane >> 3, lr = lane & 7;
  const int a_r = lr + (q & 1) * 8, a_dc = q >> 1;            // A: (rows 0-7 | 8-15) x (k 0-7 | 8-15)
  const int b_r = warp * 16 + lr + (q >> 1) * 8, b_dc = q & 1;  // B: (n 0-7 | 8-15) x (k 0-7 | 8-15)
  for (int kt = 0; kt < KT; ++kt) {
    attn::cp_async_wait<kStages - 2>();
    __syncthreads();  // slice kt has landed for every thread; slot (kt - 1) % kStages is free
    if (kt + kStages - 1 < KT) load_stage((kt + kStages - 1) % kStages, kt + kStages - 1);
    attn::cp_async_commit();
    const bf16* As = smem + (kt % kStages) * kStageElems;
    const bf16* Bs = As + BM * BK;
#pragma unroll
    for (int kk = 0; kk < BK / 16; ++kk) {
      uint32_t a[4], b[4];
      attn::ldmatrix_x4(a, As + swz(a_r, 2 * kk + a_dc));
      attn::ldmatrix_x4(b, Bs + swz(b_r, 2 * kk + b_dc));
      attn::mma_bf16_16816(acc[0], a, b[0], b[1]);
      attn::mma_bf16_16816(acc[1], a, b[2], b[3]);
    }
  }
  attn::cp_async_wait<0>();

  // C fragments: acc[t][0..1] = (row lane/4, n 2(lane%4) + 0..1 of n8 tile t), acc[t][2..3] row + 8.
  bf16* C = static_cast<bf16*>(g.c);
  const int gr = lane >> 2, gc = (lane & 3) * 2;
  if constexpr (kGeluMul) {
    const int j = j0 + warp * 8 + gc;  // tile 0 holds g, tile 1 u of columns j, j + 1
    if (j >= I) return;                // j is even and I % 4 == 0: the pair is in range
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int m = gr + 8 * h;
      if (m < rows)
        *reinterpret_cast<__nv_bfloat162*>(C + int64_t(row0 + m) * I + j) =
            __floats2bfloat162_rn(gelu_tanh(acc[0][2 * h]) * acc[1][2 * h],
                                  gelu_tanh(acc[0][2 * h + 1]) * acc[1][2 * h + 1]);
    }
    return;
  }
#pragma unroll
  for (int t = 0; t < 2; ++t) {
    const int n = n0 + warp * 16 + t * 8 + gc;
    if (n >= g.n) continue;  // n is even and N % 8 == 0: the pair is in range
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int m = gr + 8 * h;
      if (m < rows)
        *reinterpret_cast<__nv_bfloat162*>(C + int64_t(row0 + m) * g.n + n) =
            __floats2bfloat162_rn(acc[t][2 * h], acc[t][2 * h + 1]);
    }
  }
}

}  // namespace

void launch_grouped_gemm_skinny(const GroupedGemmArgs& args, bool gelu_mul, cudaStream_t stream) {
  if (args.max_tiles == 0 || args.n == 0) return;
  require(args.n % 8 == 0 && args.k % 8 == 0, "grouped_gemm_skinny: N ", args.n, " and K ", args.k,
          " must be multiples of 8");
  static_assert(kSmemBytes <= 48 * 1024, "no opt-in to more shared memory needed");
  // kGeluMul: 32 output columns (64 weight rows) per block.
  const int cols = gelu_mul ? args.n / 2 : args.n, per_block = gelu_mul ? BN / 2 : BN;
  const dim3 grid(unsigned((cols + per_block - 1) / per_block), unsigned(args.max_tiles));
  auto kernel = gelu_mul ? grouped_gemm_skinny_kernel<true> : grouped_gemm_skinny_kernel<false>;
  launch_pdl("grouped_gemm_skinny", kernel, grid, dim3(kThreads), size_t(kSmemBytes), stream, args);
}

}  // namespace gs::cuda
