#include <cuda_bf16.h>

#include "kernels/cuda/greedy_head.h"
#include "kernels/cuda/launch_util.h"

namespace gs::cuda {
namespace {

// A float and a token id packed so that unsigned comparison orders by value, then by the lower id:
// the largest key is the argmax with ties to the lowest id, and one atomicMax reduces a row.
__device__ __forceinline__ unsigned long long pack_key(float v, unsigned id) {
  unsigned u = __float_as_uint(v);
  u = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
  return (static_cast<unsigned long long>(u) << 32) | (0xFFFFFFFFu - id);
}
__device__ __forceinline__ int key_id(unsigned long long k) { return int(0xFFFFFFFFu - unsigned(k & 0xFFFFFFFFu)); }

__device__ __forceinline__ float to_f(float x) { return x; }
__device__ __forceinline__ float to_f(__nv_bfloat16 x) { return __bfloat162float(x); }

__device__ __forceinline__ unsigned long long warp_max(unsigned long long k) {
  for (int o = 16; o > 0; o >>= 1) {
    const unsigned long long other = __shfl_xor_sync(0xFFFFFFFFu, k, o);
    k = other > k ? other : k;
  }
  return k;
}

// One block's largest key into *best (atomicMax), from each thread's own.
__device__ void block_max_into(unsigned long long k, unsigned long long* best) {
  __shared__ unsigned long long warps[32];
  k = warp_max(k);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) warps[warp] = k;
  __syncthreads();
  if (warp == 0) {
    k = lane < int(blockDim.x >> 5) ? warps[lane] : 0ull;
    k = warp_max(k);
    if (lane == 0) atomicMax(best, k);
  }
}

__global__ void reset_keys_kernel(unsigned long long* best, int rows) {
  pdl_enter();
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r < rows) best[r] = 0ull;
}

__global__ void keys_to_ids_kernel(const unsigned long long* best, int* out, int rows) {
  pdl_enter();
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r < rows) out[r] = key_id(best[r]);
}

// grid (chunks, R): each block scans a slice of one row.
__global__ void argmax_rows_kernel(const float* logits, int64_t V, int64_t chunk, unsigned long long* best) {
  pdl_enter();
  const int r = blockIdx.y;
  const int64_t lo = int64_t(blockIdx.x) * chunk, hi = min(V, lo + chunk);
  const float* row = logits + int64_t(r) * V;
  unsigned long long k = 0ull;
  for (int64_t v = lo + threadIdx.x; v < hi; v += blockDim.x) {
    const unsigned long long c = pack_key(row[v], unsigned(v));
    k = c > k ? c : k;
  }
  block_max_into(k, best + r);
}

// One block per row: the top_k clusters by a bitonic sort of (score, cluster) keys in shared memory.
__global__ void top_clusters_kernel(const float* scores, int C, int pow2, int top_k, int* chosen,
                                    unsigned long long* best) {
  pdl_enter();
  extern __shared__ unsigned long long keys[];
  const int r = blockIdx.x;
  for (int i = threadIdx.x; i < pow2; i += blockDim.x)
    keys[i] = i < C ? pack_key(scores[int64_t(r) * C + i], unsigned(i)) : 0ull;
  if (threadIdx.x == 0) best[r] = 0ull;
  __syncthreads();
  // Descending bitonic sort.
  for (int size = 2; size <= pow2; size <<= 1)
    for (int stride = size >> 1; stride > 0; stride >>= 1) {
      for (int i = threadIdx.x; i < pow2 / 2; i += blockDim.x) {
        const int lo = 2 * i - (i & (stride - 1)), hi = lo + stride;
        const bool descending = (lo & size) == 0;
        const unsigned long long a = keys[lo], b = keys[hi];
        if ((a < b) == descending) keys[lo] = b, keys[hi] = a;
      }
      __syncthreads();
    }
  for (int i = threadIdx.x; i < top_k; i += blockDim.x) chosen[r * top_k + i] = key_id(keys[i]);
}

// Warp-wide bitonic steps over one key a lane, largest first across the lanes.
constexpr unsigned kFull = 0xFFFFFFFFu;
__device__ __forceinline__ unsigned long long warp_sort_desc(unsigned long long v, int lane) {
  for (int size = 2; size <= 32; size <<= 1)
    for (int stride = size >> 1; stride > 0; stride >>= 1) {
      const unsigned long long o = __shfl_xor_sync(kFull, v, stride);
      const bool keep_max = ((lane & stride) == 0) == ((lane & size) == 0);
      v = keep_max ? (o > v ? o : v) : (o < v ? o : v);
    }
  return v;
}
// The largest 32 of two descending lists a and b, descending: a[i] against b[31 - i] leaves a
// bitonic sequence holding them, which five steps sort.
__device__ __forceinline__ unsigned long long warp_merge_desc(unsigned long long a, unsigned long long b, int lane) {
  const unsigned long long rb = __shfl_sync(kFull, b, 31 - lane);
  unsigned long long v = a > rb ? a : rb;
  for (int stride = 16; stride > 0; stride >>= 1) {
    const unsigned long long o = __shfl_xor_sync(kFull, v, stride);
    v = (lane & stride) == 0 ? (o > v ? o : v) : (o < v ? o : v);
  }
  return v;
}

// One block of 32 warps per row, top_k <= 32: each warp keeps the best 32 keys of its share of
// the clusters, merging 32 more at a time, and the warps' lists meet in five merge rounds. Five
// block barriers where the full bitonic sort of 2048 keys needs 66 (~20 us on an H200).
__global__ void top32_clusters_kernel(const float* scores, int C, int top_k, int* chosen, unsigned long long* best) {
  pdl_enter();
  __shared__ unsigned long long lists[32][32];
  const int r = blockIdx.x, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const float* row = scores + int64_t(r) * C;
  if (threadIdx.x == 0) best[r] = 0ull;
  const int share = (C + 31) / 32, lo = warp * share, hi = min(C, lo + share);
  unsigned long long top = 0ull;  // below every real key
  for (int base = lo; base < hi; base += 32) {
    const int i = base + lane;
    const unsigned long long k = i < hi ? pack_key(row[i], unsigned(i)) : 0ull;
    top = warp_merge_desc(top, warp_sort_desc(k, lane), lane);
  }
  lists[warp][lane] = top;
  __syncthreads();
  for (int half = 16; half > 0; half >>= 1) {
    if (warp < half) top = warp_merge_desc(lists[warp][lane], lists[warp + half][lane], lane);
    __syncthreads();
    if (warp < half) lists[warp][lane] = top;
    __syncthreads();
  }
  if (warp == 0 && lane < top_k) chosen[r * top_k + lane] = key_id(top);
}

// grid (top_k · blocks a cluster, R), bf16 rows of H % 8 == 0: each warp scores kTokensPerWarp
// tokens of one cluster, their 16-byte loads all in flight before the sums (the scalar kernel
// below waits on each load in turn).
constexpr int kDotWarps = 8, kTokensPerWarp = 4;
__global__ void cluster_dots_vec_kernel(const __nv_bfloat16* d, const __nv_bfloat16* embed, int H,
                                        const int* token_ordering, int per, const int* chosen, int top_k,
                                        int blocks_per_cluster, unsigned long long* best) {
  pdl_enter();
  extern __shared__ float dr[];
  const int r = blockIdx.y;
  for (int h = threadIdx.x; h < H; h += blockDim.x) dr[h] = __bfloat162float(d[int64_t(r) * H + h]);
  __syncthreads();
  const int k = blockIdx.x / blocks_per_cluster, part = blockIdx.x % blocks_per_cluster;
  const int cluster = chosen[r * top_k + k];
  const int* tokens = token_ordering + int64_t(cluster) * per;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int j0 = (part * kDotWarps + warp) * kTokensPerWarp;
  const int chunks = H >> 3;
  unsigned long long kbest = 0ull;
  int t[kTokensPerWarp];
  float acc[kTokensPerWarp];
#pragma unroll
  for (int u = 0; u < kTokensPerWarp; ++u) {
    t[u] = j0 + u < per ? tokens[j0 + u] : -1;
    acc[u] = 0.f;
  }
  for (int c = lane; c < chunks; c += 32) {
    uint4 raw[kTokensPerWarp];
#pragma unroll
    for (int u = 0; u < kTokensPerWarp; ++u)
      raw[u] = t[u] >= 0 ? __ldg(reinterpret_cast<const uint4*>(embed + int64_t(t[u]) * H) + c)
                         : make_uint4(0, 0, 0, 0);
    const float* x = dr + c * 8;
#pragma unroll
    for (int u = 0; u < kTokensPerWarp; ++u) {
      const __nv_bfloat162* e2 = reinterpret_cast<const __nv_bfloat162*>(&raw[u]);
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const float2 e = __bfloat1622float2(e2[q]);
        acc[u] += x[2 * q] * e.x + x[2 * q + 1] * e.y;
      }
    }
  }
#pragma unroll
  for (int u = 0; u < kTokensPerWarp; ++u) {
    float a = acc[u];
    for (int o = 16; o > 0; o >>= 1) a += __shfl_xor_sync(kFull, a, o);
    if (t[u] >= 0) {
      const unsigned long long c = pack_key(a, unsigned(t[u]));
      kbest = c > kbest ? c : kbest;
    }
  }
  block_max_into(kbest, best + r);
}

// grid (top_k, R): block (k, r) scores the tokens of row r's k-th cluster, a warp per token.
template <typename T>
__global__ void cluster_dots_kernel(const T* d, const T* embed, int H, const int* token_ordering, int per,
                                    const int* chosen, int top_k, unsigned long long* best) {
  pdl_enter();
  extern __shared__ float dr[];
  const int r = blockIdx.y;
  for (int h = threadIdx.x; h < H; h += blockDim.x) dr[h] = to_f(d[int64_t(r) * H + h]);
  __syncthreads();
  const int cluster = chosen[r * top_k + blockIdx.x];
  const int* tokens = token_ordering + int64_t(cluster) * per;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  unsigned long long k = 0ull;
  for (int j = warp; j < per; j += warps) {
    const int t = tokens[j];
    const T* e = embed + int64_t(t) * H;
    float acc = 0.f;
    for (int h = lane; h < H; h += 32) acc += dr[h] * to_f(e[h]);
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xFFFFFFFFu, acc, o);
    const unsigned long long c = pack_key(acc, unsigned(t));
    k = c > k ? c : k;
  }
  block_max_into(k, best + r);
}

struct Scratch {
  unsigned long long* best;
  int* chosen;
};
Scratch carve(void* scratch, int64_t rows) {
  char* p = static_cast<char*>(scratch);
  Scratch s;
  s.best = reinterpret_cast<unsigned long long*>(p);
  s.chosen = reinterpret_cast<int*>(p + (rows * 8 + 255) / 256 * 256);
  return s;
}

template <typename T>
void launch_cluster_dots(const Tensor& d, const Tensor& embed, const Tensor& token_ordering, int per, const Scratch& s,
                         int top_k, cudaStream_t stream) {
  const int H = int(d.cols());
  const dim3 grid{unsigned(top_k), unsigned(d.rows())};
  const size_t smem = size_t(H) * 4;
  allow_smem(cluster_dots_kernel<T>, smem);
  launch_pdl("cluster_dots_kernel", cluster_dots_kernel<T>, grid, dim3(256), smem, stream, d.ptr<const T>(),
             embed.ptr<const T>(), H, token_ordering.ptr<const int>(), per, s.chosen, top_k, s.best);
}

void launch_keys_to_ids(const Scratch& s, const Tensor& out_ids, int rows, cudaStream_t stream) {
  launch_pdl("keys_to_ids_kernel", keys_to_ids_kernel, (rows + 127) / 128, 128, 0, stream, s.best,
             out_ids.ptr<int>(), rows);
  GS_CUDA_LAUNCHED("keys_to_ids");
}

}  // namespace

size_t greedy_head_scratch_bytes(int64_t rows, int top_k) {
  return size_t((rows * 8 + 255) / 256 * 256 + (rows * std::max(top_k, 1) * 4 + 255) / 256 * 256);
}

void launch_argmax_rows(const Tensor& logits, const Tensor& out_ids, void* scratch, cudaStream_t stream) {
  check_cuda_tensor(logits, "argmax_rows", "logits");
  check_dtype(logits, DType::F32, "argmax_rows", "logits");
  check_dtype(out_ids, DType::I32, "argmax_rows", "out_ids");
  const int R = int(logits.rows());
  const int64_t V = logits.cols();
  require(out_ids.numel() == R, "argmax_rows: out_ids ", out_ids.str(), " for ", R, " rows");
  if (R == 0) return;
  const Scratch s = carve(scratch, R);
  launch_pdl("reset_keys_kernel", reset_keys_kernel, (R + 127) / 128, 128, 0, stream, s.best, R);
  // Enough blocks to stream the rows with the whole GPU at one row, ~32 KB of logits a block.
  const int64_t chunk = 8192;
  const dim3 grid(unsigned((V + chunk - 1) / chunk), unsigned(R));
  launch_pdl("argmax_rows_kernel", argmax_rows_kernel, grid, 256, 0, stream, logits.ptr<float>(), V, chunk, s.best);
  GS_CUDA_LAUNCHED("argmax_rows");
  launch_keys_to_ids(s, out_ids, R, stream);
}

void launch_centroid_head_argmax(const Tensor& d, const Tensor& embed, const Tensor& centroid_scores,
                                 const Tensor& token_ordering, int top_k, const Tensor& out_ids, void* scratch,
                                 cudaStream_t stream) {
  const char* op = "centroid_head_argmax";
  check_cuda_tensor(d, op, "d");
  check_cuda_tensor(embed, op, "embed");
  check_dtype(centroid_scores, DType::F32, op, "centroid_scores");
  check_dtype(token_ordering, DType::I32, op, "token_ordering");
  check_dtype(out_ids, DType::I32, op, "out_ids");
  require(d.dtype == embed.dtype, op, ": d ", d.str(), " and embed ", embed.str(), " must share a dtype");
  const int R = int(d.rows()), H = int(d.cols()), C = int(centroid_scores.cols());
  const int64_t V = embed.rows();
  require(embed.cols() == H && centroid_scores.rows() == R && out_ids.numel() == R && token_ordering.numel() == V,
          op, ": shapes d ", d.str(), " embed ", embed.str(), " scores ", centroid_scores.str(), " ordering ",
          token_ordering.str(), " out ", out_ids.str());
  require(C > 0 && V % C == 0 && top_k >= 1 && top_k <= C && C <= 8192, op, ": ", C, " clusters of vocabulary ", V,
          ", top ", top_k);
  if (R == 0) return;
  const Scratch s = carve(scratch, R);
  if (top_k <= 32) {
    launch_pdl("top32_clusters_kernel", top32_clusters_kernel, R, 1024, 0, stream, centroid_scores.ptr<float>(), C,
               top_k, s.chosen, s.best);
  } else {
    int pow2 = 1;
    while (pow2 < C) pow2 <<= 1;
    const size_t sort_smem = size_t(pow2) * 8;
    allow_smem(top_clusters_kernel, sort_smem);
    launch_pdl("top_clusters_kernel", top_clusters_kernel, R, 1024, sort_smem, stream, centroid_scores.ptr<float>(),
               C, pow2, top_k, s.chosen, s.best);
  }
  GS_CUDA_LAUNCHED("top_clusters");
  const int per = int(V / C);
  if (d.dtype == DType::BF16 && H % 8 == 0) {
    const int blocks_per_cluster = (per + kDotWarps * kTokensPerWarp - 1) / (kDotWarps * kTokensPerWarp);
    const size_t smem = size_t(H) * 4;
    allow_smem(cluster_dots_vec_kernel, smem);
    const dim3 vec_grid(unsigned(top_k * blocks_per_cluster), unsigned(R));
    launch_pdl("cluster_dots_vec_kernel", cluster_dots_vec_kernel, vec_grid, dim3(32 * kDotWarps), smem, stream,
               d.ptr<const __nv_bfloat16>(), embed.ptr<const __nv_bfloat16>(), H, token_ordering.ptr<const int>(), per,
               s.chosen, top_k, blocks_per_cluster, s.best);
  } else if (d.dtype == DType::BF16)
    launch_cluster_dots<__nv_bfloat16>(d, embed, token_ordering, per, s, top_k, stream);
  else if (d.dtype == DType::F32)
    launch_cluster_dots<float>(d, embed, token_ordering, per, s, top_k, stream);
  else
    fail(str_cat(op, ": d has dtype ", dtype_name(d.dtype), "; expected bf16 or f32"));
  GS_CUDA_LAUNCHED("cluster_dots");
  launch_keys_to_ids(s, out_ids, R, stream);
}

}  // namespace gs::cuda
