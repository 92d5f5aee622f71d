// MoE experts: checks the operands and picks a path (moe.h). Up to four tokens' routed rows
// (decode at batch 1-4) go to the GEMV path (moe_gemv.cu), bound by streaming the active experts'
// weights. Otherwise: count tokens per expert, lay out a permutation grouped by expert with a
// row-tile map, run gate_up (with gelu·mul in its epilogue) and down as grouped tensor-core GEMMs
// over it (grouped_gemm_mma.cu, 16- or 64-row tiles), and combine the weighted expert outputs per
// token. The combine is a gather (each token sums its own k rows in f32), so no atomics touch bf16
// data and the result does not depend on the order the permutation was filled in.
#include <cstdlib>
#include <string>

#include "kernels/cuda/device_math.cuh"
#include "kernels/cuda/grouped_gemm.h"
#include "kernels/cuda/kernel_policy.h"
#include "kernels/cuda/launch_util.h"
#include "kernels/cuda/moe.h"
#include "kernels/cuda/moe_combine.cuh"
#include "kernels/cuda/moe_gemv.cuh"
#include "kernels/cuda/scratch_arena.h"

namespace gs::cuda {
namespace {

struct MoeScratch {
  int *counts, *cursor, *group_end, *tile_expert, *tile_row0, *perm, *pos_of;
  bf16 *act, *y;
  int max_tiles;
};

// The tile map is sized for the smallest tiles (16 rows), so one carve serves every grouped kernel.
MoeScratch carve(void* base, int64_t T, int64_t k, int64_t E, int64_t H, int64_t I, size_t* used) {
  ScratchCarver c(base);
  MoeScratch s{};
  const int64_t TK = T * k;
  s.max_tiles = int((TK + 16 - 1) / 16 + E);
  s.counts = c.take<int>(size_t(E));
  s.cursor = c.take<int>(size_t(E));
  s.group_end = c.take<int>(size_t(E));
  s.tile_expert = c.take<int>(size_t(s.max_tiles));
  s.tile_row0 = c.take<int>(size_t(s.max_tiles));
  s.perm = c.take<int>(size_t(TK));
  s.pos_of = c.take<int>(size_t(TK));
  s.act = c.take<bf16>(size_t(TK * I));
  s.y = c.take<bf16>(size_t(TK * H));
  if (used) *used = c.used();
  return s;
}

__global__ void count_kernel(const int* __restrict__ ids, int64_t n, int E, int* counts) {
  pdl_enter();
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    int e = ids[i];
    if (e >= 0 && e < E) atomicAdd(&counts[e], 1);
  }
}

// One block: offsets by a scan over experts (E is small), then each expert writes its row tiles;
// the rest of the tile map is marked unused.
__global__ void plan_kernel(const int* __restrict__ counts, int E, int tile_m, int* group_end, int* cursor,
                            int* tile_expert, int* tile_row0, int max_tiles) {
  pdl_enter();
  extern __shared__ int sh[];  // [E] row offsets, [E] tile offsets, then the tile total
  int* row_off = sh;
  int* tile_off = sh + E;
  if (threadIdx.x == 0) {
    int rows = 0, tiles = 0;
    for (int e = 0; e < E; ++e) {
      row_off[e] = rows;
      tile_off[e] = tiles;
      rows += counts[e];
      tiles += (counts[e] + tile_m - 1) / tile_m;
    }
    sh[2 * E] = tiles;
  }
  __syncthreads();
  for (int e = threadIdx.x; e < E; e += blockDim.x) {
    group_end[e] = row_off[e] + counts[e];
    cursor[e] = row_off[e];
    int nt = (counts[e] + tile_m - 1) / tile_m;
    for (int j = 0; j < nt; ++j) {
      tile_expert[tile_off[e] + j] = e;
      tile_row0[tile_off[e] + j] = row_off[e] + j * tile_m;
    }
  }
  for (int t = sh[2 * E] + threadIdx.x; t < max_tiles; t += blockDim.x) tile_expert[t] = -1;
}

__global__ void scatter_kernel(const int* __restrict__ ids, int64_t n, int E, int* cursor, int* perm, int* pos_of) {
  pdl_enter();
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    int e = ids[i];
    if (e >= 0 && e < E) {
      int p = atomicAdd(&cursor[e], 1);
      perm[p] = int(i);
      pos_of[i] = p;
    } else {
      pos_of[i] = -1;
    }
  }
}

// The routed-row limit of the GEMV path: the policy's moe.gemv_max_rows (kMoeGemvMaxRows by default).
static_assert(MoePolicy{}.gemv_max_rows == kMoeGemvMaxRows, "the policy's default is the measured limit");
int64_t gemv_max_rows() { return kernel_policy().moe.gemv_max_rows; }

// The GEMV path holds up to kRows (8) routed rows of x (bf16) and of the activation (f32) in
// shared memory; shapes too wide for that take a grouped path at any T.
bool gemv_fits(int64_t T, int64_t k, int64_t H, int64_t I) {
  const int64_t rows = std::min<int64_t>(8, T * k);
  return rows * H * 2 <= 160 * 1024 && rows * I * 4 <= 160 * 1024;
}

// Which kernels multiply (moe.h, kMoeGemvMaxRows, kMoeMma16MaxRowsPerExpert and the policy's
// moe.path).
using Path = MoePath;

Path pick_path(int64_t T, int64_t k, int64_t E, int64_t H, int64_t I) {
  const bool fits = gemv_fits(T, k, H, I);
  // Batch-invariant policy: 16-row grouped tiles at every T (no split-K, K in order, a row's bits
  // independent of the rows beside it); the GEMV path and the 64-row tiles round differently.
  if (kernel_policy().batch_invariant) return Path::Mma16;
  const Path forced = kernel_policy().moe.path;
  if (forced == Path::Gemv && fits) return Path::Gemv;
  if (forced != Path::Auto && forced != Path::Gemv) return forced;
  if (T * k <= gemv_max_rows() && fits) return Path::Gemv;
  return T * k <= kMoeMma16MaxRowsPerExpert * E ? Path::Mma16 : Path::Mma64;
}
int tile_rows(Path p) { return p == Path::Mma16 ? 16 : 64; }

}  // namespace

size_t moe_experts_scratch_bytes(int64_t T, int64_t k, int64_t E, int64_t H, int64_t I) {
  const Path path = pick_path(T, k, E, H, I);
  if (path == Path::Gemv) return moe_gemv_scratch_bytes(T, k, E, H, I);
  size_t used = 0;
  carve(nullptr, T, k, E, H, I, &used);
  return used;
}

void launch_moe_experts(const Tensor& x, const Tensor& ids, const Tensor& weights, const Tensor& gate_up,
                        const Tensor& down, const Tensor& out, void* scratch, size_t scratch_bytes,
                        cudaStream_t stream, const MoeSum* sum) {
  const char* op = "moe_experts";
  for (auto* t : {&x, &ids, &weights, &gate_up, &down, &out}) check_cuda_tensor(*t, op, "operand");
  check_dtype(x, DType::BF16, op, "x");
  check_dtype(gate_up, DType::BF16, op, "gate_up");
  check_dtype(down, DType::BF16, op, "down");
  check_dtype(ids, DType::I32, op, "ids");
  check_dtype(weights, DType::F32, op, "weights");
  require(gate_up.ndim() == 3 && down.ndim() == 3, op, ": gate_up ", gate_up.str(), " and down ", down.str(),
          " must be 3-D");
  const int64_t T = x.rows(), H = x.cols(), E = gate_up.dim(0), I = gate_up.dim(1) / 2, k = ids.cols();
  require(gate_up.dim(1) == 2 * I && gate_up.dim(2) == H && down.dim(0) == E && down.dim(1) == H && down.dim(2) == I,
          op, ": gate_up ", gate_up.str(), " / down ", down.str(), " do not match hidden ", H);
  require(ids.rows() == T && weights.rows() == T && weights.cols() == k && out.rows() == T && out.cols() == H &&
              out.dtype == x.dtype,
          op, ": ids ", ids.str(), " weights ", weights.str(), " out ", out.str(), " for x ", x.str());
  require(k >= 1 && k <= kMoeMaxTopK, op, ": top-k ", k, " outside [1, ", kMoeMaxTopK, "]");
  require(E >= 1 && E <= 4096, op, ": ", E, " experts outside [1, 4096]");
  require(H % 8 == 0 && I % 8 == 0 && aligned16(x.data) && aligned16(gate_up.data) && aligned16(down.data), op,
          ": hidden ", H, " and expert width ", I, " must be multiples of 8 with 16-byte aligned operands");
  if (sum) {
    require(sum->dense && sum->dense_norm && sum->experts_norm, op, ": the layer sum needs dense and both norms");
    const Tensor &d = *sum->dense, &dn = *sum->dense_norm, &en = *sum->experts_norm;
    for (auto* t : {&d, &dn, &en}) check_cuda_tensor(*t, op, "sum operand");
    require(moe_sum_supported(H) && out.dtype == DType::BF16 && d.dtype == DType::BF16 && d.shape == out.shape &&
                dn.dtype == DType::BF16 && en.dtype == DType::BF16 && dn.numel() == H && en.numel() == H,
            op, ": the layer sum takes bf16 dense ", d.str(), " and norms ", dn.str(), " / ", en.str(), " for out ",
            out.str(), " (H a multiple of 32, at most 4096)");
  }
  if (T == 0) return;
  size_t need = moe_experts_scratch_bytes(T, k, E, H, I);
  require(scratch && scratch_bytes >= need, op, ": scratch of ", scratch_bytes, " bytes, needs ", need);
  const Path path = pick_path(T, k, E, H, I);
  if (path == Path::Gemv) {
    const MoeGemvArgs a{x.ptr<bf16>(), ids.ptr<int>(), weights.ptr<float>(), gate_up.ptr<bf16>(), down.ptr<bf16>(),
                        int(T), int(k), int(E), int(H), int(I)};
    dispatch_float(out.dtype, op, "out", [&](auto tag) {
      using T_ = typename decltype(tag)::type;
      launch_moe_gemv<T_>(a, out.ptr<T_>(), scratch, stream, sum);
    });
    return;
  }
  MoeScratch s = carve(scratch, T, k, E, H, I, nullptr);
  const int64_t TK = T * k;

  GS_CUDA_CHECK(cudaMemsetAsync(s.counts, 0, size_t(E) * sizeof(int), stream));
  launch_pdl("count_kernel", count_kernel, grid_for(TK, 256), 256, 0, stream, ids.ptr<int>(), TK, int(E), s.counts);
  GS_CUDA_LAUNCHED("moe count");
  const int tile_m = tile_rows(path);
  launch_pdl("plan_kernel", plan_kernel, 1, 256, size_t(2 * E + 1) * sizeof(int), stream, s.counts, int(E), tile_m,
             s.group_end, s.cursor, s.tile_expert, s.tile_row0, s.max_tiles);
  GS_CUDA_LAUNCHED("moe plan");
  launch_pdl("scatter_kernel", scatter_kernel, grid_for(TK, 256), 256, 0, stream, ids.ptr<int>(), TK, int(E), s.cursor,
             s.perm, s.pos_of);
  GS_CUDA_LAUNCHED("moe scatter");

  GroupedGemmArgs g{};
  g.group_end = s.group_end, g.tile_expert = s.tile_expert, g.tile_row0 = s.tile_row0, g.max_tiles = s.max_tiles;
  // act = bf16(gelu_tanh(g) · u), [g|u] = x[token] · gate_up[e]ᵀ with rows gathered through the
  // permutation; gelu·mul runs in the GEMM's epilogue from f32 g and u (the GEMV path's rounding
  // points).
  g.a = x.data, g.gather = s.perm, g.gather_div = int(k), g.b = gate_up.data, g.c = s.act;
  g.n = int(2 * I), g.k = int(H);
  launch_grouped_gemm_mma(g, tile_m, true, stream);
  // y = act · down[e]ᵀ
  g.a = s.act, g.gather = nullptr, g.gather_div = 1, g.b = down.data, g.c = s.y;
  g.n = int(H), g.k = int(I);
  launch_grouped_gemm_mma(g, tile_m, false, stream);

  dispatch_float(out.dtype, op, "out", [&](auto tag) {
    using T_ = typename decltype(tag)::type;
    launch_moe_combine(s.y, s.pos_of, ids.ptr<int>(), weights.ptr<float>(), int(k), T, H, out.ptr<T_>(), sum, stream);
  });
}

}  // namespace gs::cuda
