// Embedding gathers. Both are memory-bound copies with a multiply; the PLE kernel also normalises
// each [P] slice, one warp per (token, layer) slice.
#include "kernels/cuda/device_math.cuh"
#include "kernels/cuda/embedding.h"
#include "kernels/cuda/launch_util.h"

namespace gs::cuda {
namespace {

constexpr int kThreads = 256;

// One item = V consecutive columns of one output row.
template <typename TW, typename T, int V>
__global__ void embedding_kernel(const TW* __restrict__ table, int64_t vocab, int64_t first_id,
                                 const int* __restrict__ ids, float scale, T* __restrict__ out, int64_t rows,
                                 int64_t cols) {
  pdl_enter();
  int64_t per_row = cols / V, n = rows * per_row;
  for (int64_t it = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; it < n; it += int64_t(gridDim.x) * blockDim.x) {
    int64_t r = it / per_row, c = (it % per_row) * V;
    int64_t id = ids[r] - first_id;
    float v[V];
    if (id < 0 || id >= vocab) {
#pragma unroll
      for (int e = 0; e < V; ++e) v[e] = 0.f;
    } else if constexpr (V > 1 && V == kVec<TW>) {
      load_vec(table + id * cols + c, v);
    } else {
#pragma unroll
      for (int e = 0; e < V; ++e) v[e] = to_f32(table[id * cols + c + e]);
    }
#pragma unroll
    for (int e = 0; e < V; ++e) v[e] *= scale;
    if constexpr (V > 1 && V == kVec<T>) {
      store_vec(out + r * cols + c, v);
    } else {
#pragma unroll
      for (int e = 0; e < V; ++e) out[r * cols + c + e] = from_f32<T>(v[e]);
    }
  }
}

constexpr int kPleMaxPerLane = 32;  // P <= 1024

// KP: elements of the row a lane holds (P <= 32·KP); 8 covers every Gemma-4 PLE (P = 256) with a
// third of the registers the general bound needs.
template <typename TW, typename T, int KP>
__global__ void ple_kernel(const T* __restrict__ proj, const TW* __restrict__ table, int64_t vocab,
                           const int* __restrict__ ids, const void* norm_w, bool norm_f32, float proj_scale,
                           float table_scale, float combine_scale, float eps, T* __restrict__ out, int T_rows,
                           int L, int P) {
  // Before the wait: the table row (an immutable weight, at the step's input id, copied in before
  // its first kernel) and the norm weights; after it, the projection row the GEMV before wrote.
  const int lane = threadIdx.x & 31;
  const int64_t slice = blockIdx.x * int64_t(blockDim.x >> 5) + (threadIdx.x >> 5);  // t * L + l
  if (slice >= int64_t(T_rows) * L) {
    pdl_enter();
    return;
  }
  const int t = int(slice / L), l = int(slice % L);
  const int id = ids[t];
  const bool valid = id >= 0 && id < vocab;
  const TW* tr = table + int64_t(valid ? id : 0) * L * P + int64_t(l) * P;
  float tb[KP], nw[KP];
#pragma unroll
  for (int k = 0; k < KP; ++k) {
    const int i = lane + 32 * k;
    tb[k] = valid && i < P ? rnd<T>(to_f32(tr[i]) * table_scale) : 0.f;
    nw[k] = i < P ? load_weight(norm_w, norm_f32, i) : 0.f;
  }
  pdl_enter();
  const T* pr = proj + int64_t(t) * L * P + int64_t(l) * P;
  float a[KP];
  float sumsq = 0.f;
#pragma unroll
  for (int k = 0; k < KP; ++k) {
    int i = lane + 32 * k;
    a[k] = i < P ? rnd<T>(to_f32(pr[i]) * proj_scale) : 0.f;
    sumsq += a[k] * a[k];
  }
  float inv = rsqrtf(warp_sum(sumsq) / float(P) + eps);
  T* o = out + (int64_t(l) * T_rows + t) * P;
#pragma unroll
  for (int k = 0; k < KP; ++k) {
    int i = lane + 32 * k;
    if (i >= P) break;
    float n = rnd<T>(a[k] * inv * nw[k]);
    o[i] = from_f32<T>(rnd<T>(n + tb[k]) * combine_scale);
  }
}

}  // namespace

void launch_embedding(const Tensor& table, const Tensor& ids, float scale, const Tensor& out, cudaStream_t stream,
                      int64_t first_id) {
  check_cuda_tensor(table, "embedding", "table");
  check_cuda_tensor(ids, "embedding", "ids");
  check_cuda_tensor(out, "embedding", "out");
  check_dtype(ids, DType::I32, "embedding", "ids");
  require(table.ndim() == 2 && out.cols() == table.cols() && out.rows() == ids.numel(), "embedding: out ", out.str(),
          " must be [ids ", ids.str(), ", cols of table ", table.str(), "]");
  int64_t rows = ids.numel(), cols = table.cols();
  if (rows == 0 || cols == 0) return;
  dispatch_float(table.dtype, "embedding", "table", [&](auto wtag) {
    using TW = typename decltype(wtag)::type;
    dispatch_float(out.dtype, "embedding", "out", [&](auto tag) {
      using T = typename decltype(tag)::type;
      constexpr int V = 8;  // 16 bytes of bf16; f32 sides use scalar accesses
      bool vec = cols % V == 0 && aligned16(table.data) && aligned16(out.data);
      if (vec)
        launch_pdl("embedding_kernel", embedding_kernel<TW, T, V>, grid_for(rows * cols / V, kThreads), kThreads, 0,
                   stream, table.ptr<TW>(), table.rows(), first_id, ids.ptr<int>(), scale, out.ptr<T>(), rows, cols);
      else
        launch_pdl("embedding_kernel", embedding_kernel<TW, T, 1>, grid_for(rows * cols, kThreads), kThreads, 0, stream,
                   table.ptr<TW>(), table.rows(), first_id, ids.ptr<int>(), scale, out.ptr<T>(), rows, cols);
      GS_CUDA_LAUNCHED("embedding");
    });
  });
}

void launch_per_layer_inputs(const Tensor& proj, const Tensor& table, const Tensor& ids, const Tensor& norm_w,
                             float proj_scale, float table_scale, float combine_scale, float eps, const Tensor& out,
                             cudaStream_t stream) {
  const char* op = "per_layer_inputs";
  for (auto* t : {&proj, &table, &ids, &norm_w, &out}) check_cuda_tensor(*t, op, "operand");
  check_dtype(ids, DType::I32, op, "ids");
  require(out.ndim() == 3, op, ": out ", out.str(), " must be [L, T, P]");
  const int L = int(out.dim(0)), T_rows = int(out.dim(1)), P = int(out.dim(2));
  require(ids.numel() == T_rows && proj.rows() == T_rows && proj.cols() == int64_t(L) * P, op, ": proj ", proj.str(),
          " must be [T, L·P] and ids ", ids.str(), " [T] for out ", out.str());
  require(table.ndim() == 2 && table.cols() == int64_t(L) * P, op, ": table ", table.str(), " must be [V, L·P]");
  require(norm_w.numel() == P && (norm_w.dtype == DType::BF16 || norm_w.dtype == DType::F32), op, ": norm weight ",
          norm_w.str(), " must have P elements");
  require(proj.dtype == out.dtype, op, ": proj ", proj.str(), " and out ", out.str(), " must share a dtype");
  require(P <= 32 * kPleMaxPerLane, op, ": P = ", P, " is above the supported ", 32 * kPleMaxPerLane);
  if (int64_t(T_rows) * L * P == 0) return;
  dispatch_float(table.dtype, op, "table", [&](auto wtag) {
    using TW = typename decltype(wtag)::type;
    dispatch_float(out.dtype, op, "out", [&](auto tag) {
      using T = typename decltype(tag)::type;
      int64_t slices = int64_t(T_rows) * L;
      int warps = 8;
      auto kernel = P <= 32 * 8 ? ple_kernel<TW, T, 8> : ple_kernel<TW, T, kPleMaxPerLane>;
      launch_pdl("ple_kernel", kernel, unsigned((slices + warps - 1) / warps), warps * 32, 0, stream, proj.ptr<T>(),
                 table.ptr<TW>(), table.rows(), ids.ptr<int>(), norm_w.data, norm_w.dtype == DType::F32, proj_scale,
                 table_scale, combine_scale, eps, out.ptr<T>(), T_rows, L, P);
      GS_CUDA_LAUNCHED(op);
    });
  });
}

}  // namespace gs::cuda
