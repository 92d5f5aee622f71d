// Sampling kernels: one block per logits row.
//
// The cpu backend sorts a row to apply top_k / top_p; a sort of 262144 logits per row would be
// the slowest part of a decode step here. Every filter keeps a prefix of the row in the order
// (z descending, id ascending), so each one is a cut in that order, found by a radix select:
// elements get a unique 64-bit key (order-preserving bits of z, then the complemented id), and
// eight 8-bit histogram passes at most (usually two or three: they stop when one element is left)
// find the element where the cumulative weight — a count for top_k, probability mass for top_p —
// crosses the target. The final pass is the Gumbel-max draw over the kept prefix.
#include <algorithm>
#include <cfloat>
#include <climits>

#include "kernels/cuda/device_math.cuh"
#include "kernels/cuda/launch_util.h"
#include "kernels/cuda/sampling.h"
#include "ops/sampling_rng.h"

namespace gs::cuda {
namespace {

constexpr int kThreads = 1024;

__device__ __forceinline__ uint32_t order_bits(float f) {
  uint32_t u = __float_as_uint(f);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

// Larger key = earlier in (value descending, id ascending). Never 0 for a real element.
__device__ __forceinline__ uint64_t order_key(float v, int64_t id) {
  return (uint64_t(order_bits(v)) << 32) | uint64_t(0xFFFFFFFFu - uint32_t(id));
}

struct SelectShared {
  double mass[256];
  int count[256];
  uint64_t prefix, mask, found;
  double above;
  int state;  // 0 searching, 1 one element left in the chosen bin, 2 target not reached
};

// Adds weight w and count 1 to bin b for each active lane; the weights with one shared-memory
// atomic per distinct bin of the warp (the whole warp calls; top_p alone 3.66 -> 2.29 ms at
// 64 x 262144 on the H200). A row's elements crowd into a few bins (the
// first pass bins by sign and exponent), and contended shared atomics, the f64 ones above all,
// were most of a select's time. The peers' weights are summed by the warp first; the bins already
// received their weights in no fixed order, so the select's result is unchanged.
template <bool kCounts>
__device__ __forceinline__ void warp_histogram_add(bool active, int b, double w, SelectShared& sh) {
  const int lane = threadIdx.x & 31;
  if constexpr (kCounts) {
    // Native integer atomics: aggregating them (match_any) measured slower (H200, 2026-11-25: top-k
    // + top-p 1.81 -> 1.98 ms, top_logprobs 0.97 -> 1.13).
    if (active) atomicAdd(&sh.count[b], 1);
  } else {
    unsigned pending = __ballot_sync(0xffffffffu, active);
    while (pending) {
      const int leader = __ffs(pending) - 1;
      const int lb = __shfl_sync(0xffffffffu, b, leader);
      const bool mine = active && b == lb;
      const unsigned peers = __ballot_sync(0xffffffffu, mine);
      double v = mine ? w : 0.0;
      for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
      if (lane == leader) atomicAdd(&sh.mass[lb], v), atomicAdd(&sh.count[lb], __popc(peers));
      pending &= ~peers;
    }
  }
}

// The key of the element e (in descending key order over the candidates) where the cumulative
// weight crosses `target`: W(keys > e) < target <= W(keys >= e). 0 when the candidates weigh less
// than `target`. weight_of(i) < 0 marks i as no candidate. All threads of the block must call.
// kCounts: every candidate weighs 1 (top_k), so only the counts are kept (the double-precision
// shared atomics of the mass were most of a filtered sample's time: 5.2 ms at 64 x 262144).
// weight_of is called only for elements still in the search (the key's known bits match), as a
// top_p weight costs an exp.
// kFraction: target is a fraction of the candidates' total weight, which the first pass's
// histogram (every candidate in some bin) adds up, so top_p needs no pass of its own for it.
template <bool kCounts, bool kFraction = false, typename KeyF, typename WeightF>
__device__ uint64_t block_select(int64_t n, double target, KeyF key_of, WeightF weight_of, SelectShared& sh) {
  if (threadIdx.x == 0) sh.prefix = 0, sh.mask = 0, sh.above = 0, sh.state = 0, sh.found = 0;
  __syncthreads();
  for (int shift = 56; shift >= 0; shift -= 8) {
    for (int b = threadIdx.x; b < 256; b += blockDim.x) sh.mass[b] = 0, sh.count[b] = 0;
    __syncthreads();
    const uint64_t prefix = sh.prefix, mask = sh.mask;
    // Whole warps through every iteration (blockDim.x is a multiple of 32), for the warp histogram.
    for (int64_t base = 0; base < n; base += blockDim.x) {
      const int64_t i = base + threadIdx.x;
      bool active = false;
      int b = 0;
      double w = 0;
      if (i < n) {
        const uint64_t k = key_of(i);
        if ((k & mask) == prefix) {
          w = weight_of(i);
          active = w >= 0;
          b = int((k >> shift) & 255u);
        }
      }
      warp_histogram_add<kCounts>(active, b, w, sh);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      if (kFraction && shift == 56) {  // thread 0 alone uses target
        double total = 0;
        for (int b = 0; b < 256; ++b) total += sh.mass[b];
        target *= total;
      }
      double cum = sh.above;
      int chosen = -1;
      for (int b = 255; b >= 0; --b) {
        if (sh.count[b] == 0) continue;
        const double m = kCounts ? double(sh.count[b]) : sh.mass[b];
        if (cum + m >= target) {
          chosen = b;
          break;
        }
        cum += m;
      }
      if (chosen < 0) {
        sh.state = 2;
      } else {
        sh.above = cum;
        sh.prefix = prefix | (uint64_t(chosen) << shift);
        sh.mask = mask | (uint64_t(255) << shift);
        if (sh.count[chosen] == 1) sh.state = 1;
      }
    }
    __syncthreads();
    if (sh.state != 0) break;
  }
  const int state = sh.state;
  uint64_t result = sh.prefix;  // state 0: all 64 bits are known
  if (state == 2) result = 0;
  if (state == 1) {
    const uint64_t prefix = sh.prefix, mask = sh.mask;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
      const uint64_t k = key_of(i);
      if ((k & mask) == prefix && weight_of(i) >= 0) sh.found = k;
    }
    __syncthreads();
    result = sh.found;
  }
  __syncthreads();  // sh is reused by the next select
  return result;
}

// Block-wide argmax of (value, id), ties to the lowest id. Every thread gets the result id
// (INT_MAX when no thread had a candidate).
__device__ int block_argmax(float v, int id, float* s_val, int* s_id) {
  for (int o = 16; o > 0; o >>= 1) {
    float ov = __shfl_xor_sync(0xffffffffu, v, o);
    int oid = __shfl_xor_sync(0xffffffffu, id, o);
    if (ov > v || (ov == v && oid < id)) v = ov, id = oid;
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  __syncthreads();
  if (lane == 0) s_val[warp] = v, s_id[warp] = id;
  __syncthreads();
  v = lane < nwarps ? s_val[lane] : -INFINITY;
  id = lane < nwarps ? s_id[lane] : INT_MAX;
  for (int o = 16; o > 0; o >>= 1) {
    float ov = __shfl_xor_sync(0xffffffffu, v, o);
    int oid = __shfl_xor_sync(0xffffffffu, id, o);
    if (ov > v || (ov == v && oid < id)) v = ov, id = oid;
  }
  return id;
}

__device__ double block_sum_f64(double x, double* scratch) {
  for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  __syncthreads();
  if (lane == 0) scratch[warp] = x;
  __syncthreads();
  x = lane < nwarps ? scratch[lane] : 0.0;
  for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
  return x;
}

// max (as argmax, lowest id) and log Σ exp of a row; what both kernels start with.
struct RowStats {
  int argmax;
  float max;
  double lse;
};

// One thread's share of a pass over l[i] for i = begin + k·stride < end: its argmax and
// Σ exp(l - best) against its own running max (rescaled when it grows). The exps are f32 (a double
// exp per logit made sampling the slowest kernel of a batch-1 decode step); the sum of <= 262144
// terms in [0, 1] keeps ~1e-6 relative accuracy, far inside what a logprob needs.
struct ThreadStats {
  float best = -INFINITY;
  int best_i = INT_MAX;
  float sum = 0.f;
};
__device__ ThreadStats thread_stats(const float* l, int64_t begin, int64_t end, int64_t stride) {
  ThreadStats t;
  for (int64_t i = begin; i < end; i += stride) {
    const float v = l[i];
    if (v > t.best) {
      t.sum = (t.best == -INFINITY ? 0.f : t.sum * expf(t.best - v)) + 1.f;
      t.best = v, t.best_i = int(i);
    } else {
      if (v == t.best && int(i) < t.best_i) t.best_i = int(i);
      if (v != -INFINITY) t.sum += expf(v - t.best);  // a NaN poisons the sum, as it did in f64
    }
  }
  return t;
}

// The block's (argmax, max, Σ exp(l - max)) from its threads' stats. argmax INT_MAX: no finite or
// +inf logit among them (max -inf, sum 0).
struct SliceStats {
  int argmax;
  float max;
  double sum;
};
__device__ SliceStats block_stats(const float* l, const ThreadStats& t, float* s_val, int* s_id, double* s_sum) {
  SliceStats b;
  b.argmax = block_argmax(t.best, t.best_i, s_val, s_id);
  b.max = b.argmax == INT_MAX ? -INFINITY : l[b.argmax];
  const double s =
      (t.best == -INFINITY || b.max == -INFINITY) ? 0.0 : double(t.sum) * exp(double(t.best) - double(b.max));
  b.sum = block_sum_f64(s, s_sum);
  return b;
}

__device__ RowStats finish_stats(const float* l, SliceStats b) {
  RowStats st;
  st.argmax = b.argmax == INT_MAX ? 0 : b.argmax;  // every logit is -inf or NaN
  st.max = l[st.argmax];
  st.lse = st.max == -INFINITY ? -INFINITY : double(st.max) + log(b.sum);
  return st;
}

// The whole row in one block (top_logprobs).
__device__ RowStats row_stats(const float* l, int64_t V, float* s_val, int* s_id, double* s_sum) {
  const ThreadStats t = thread_stats(l, threadIdx.x, V, blockDim.x);
  return finish_stats(l, block_stats(l, t, s_val, s_id, s_sum));
}

// At batch 1 one block cannot stream a 1 MB row fast (a single SM's load rate and expf throughput:
// ~125 us on an H200), so the row statistics of sample() are taken by many blocks, one slice of
// the row each, and combined by the sampling kernel: partial[row·slices + s] = stats of slice s.
constexpr int kSliceThreads = 256;
constexpr int64_t kMinSlice = 4096;

int slices_for(int64_t rows, int64_t vocab) {
  const int64_t most = (vocab + kMinSlice - 1) / kMinSlice;
  const int64_t want = (4 * int64_t(sm_count()) + rows - 1) / rows;  // a few waves of blocks in all
  return int(std::clamp<int64_t>(want, 1, std::min<int64_t>(most, kThreads)));
}

__global__ void __launch_bounds__(kSliceThreads) slice_stats_kernel(const float* __restrict__ logits, int64_t V,
                                                                    int slices, SliceStats* __restrict__ partial) {
  pdl_enter();
  __shared__ float s_val[32];
  __shared__ int s_id[32];
  __shared__ double s_sum[32];
  const int r = blockIdx.y, s = blockIdx.x;
  const float* l = logits + int64_t(r) * V;
  const int64_t len = (V + slices - 1) / slices, begin = int64_t(s) * len, end = begin + len < V ? begin + len : V;
  const ThreadStats t = thread_stats(l, begin + threadIdx.x, end, blockDim.x);
  const SliceStats b = block_stats(l, t, s_val, s_id, s_sum);
  if (threadIdx.x == 0) partial[int64_t(r) * slices + s] = b;
}

// The row's stats from its slices' (one thread a slice; slices <= blockDim.x).
__device__ RowStats combine_slices(const float* l, const SliceStats* part, int slices, float* s_val, int* s_id,
                                   double* s_sum) {
  const bool mine = int(threadIdx.x) < slices;
  const SliceStats p = mine ? part[threadIdx.x] : SliceStats{INT_MAX, -INFINITY, 0.0};
  SliceStats b;
  b.argmax = block_argmax(p.max, p.argmax, s_val, s_id);
  b.max = b.argmax == INT_MAX ? -INFINITY : l[b.argmax];
  b.sum = block_sum_f64(p.max == -INFINITY || b.max == -INFINITY ? 0.0 : p.sum * exp(double(p.max) - double(b.max)),
                        s_sum);
  return finish_stats(l, b);
}

__global__ void __launch_bounds__(kThreads) sample_kernel(const float* __restrict__ logits, int64_t V,
                                                          const SamplingRow* __restrict__ rows, int* out_ids,
                                                          float* out_logprobs, const SliceStats* __restrict__ partial,
                                                          int slices) {
  pdl_enter();
  __shared__ SelectShared sh;
  __shared__ float s_val[32];
  __shared__ int s_id[32];
  __shared__ double s_sum[32];
  const int r = blockIdx.x;
  const float* l = logits + int64_t(r) * V;
  const SamplingRow row = rows[r];
  const RowStats st = combine_slices(l, partial + int64_t(r) * slices, slices, s_val, s_id, s_sum);

  int chosen = st.argmax;
  if (row.temperature > 0.f) {
    const float temp = row.temperature;
    const float zmax = st.max / temp;  // division is monotone: the largest z is the largest l's
    auto key_of = [&](int64_t i) { return order_key(l[i] / temp, i); };
    uint64_t cut = 0;  // kept: key >= cut
    if (row.top_k > 0 && row.top_k < V) {
      cut = block_select<true>(V, double(row.top_k) - 0.5, key_of, [](int64_t) { return 1.0; }, sh);
    }
    if (row.top_p < 1.f) {
      auto mass = [&](int64_t i) {
        float z = l[i] / temp;
        return order_key(z, i) >= cut ? exp(double(z) - double(zmax)) : -1.0;
      };
      const uint64_t e = block_select<false, true>(V, double(row.top_p), key_of, mass, sh);
      if (e != 0) cut = e;
    }
    const bool use_min_p = row.min_p > 0.f;
    const double min_z = use_min_p ? double(zmax) + log(double(row.min_p)) : 0.0;
    float best = -INFINITY;
    int best_i = INT_MAX;
    for (int64_t i = threadIdx.x; i < V; i += blockDim.x) {
      float z = l[i] / temp;
      if (order_key(z, i) < cut || (use_min_p && double(z) < min_z)) continue;
      float g = z + rng::gumbel(rng::uniform(row.seed, row.step, uint64_t(i)));
      if (best_i == INT_MAX || g > best || (g == best && int(i) < best_i)) best = g, best_i = int(i);
    }
    int id = block_argmax(best, best_i, s_val, s_id);
    if (id != INT_MAX) chosen = id;
  }
  if (threadIdx.x == 0) {
    out_ids[r] = chosen;
    out_logprobs[r] = float(double(l[chosen]) - st.lse);
  }
}

__global__ void __launch_bounds__(kThreads) top_logprobs_kernel(const float* __restrict__ logits, int64_t V, int n,
                                                                int* out_ids, float* out_logprobs) {
  pdl_enter();
  __shared__ SelectShared sh;
  __shared__ float s_val[32];
  __shared__ int s_id[32];
  __shared__ double s_sum[32];
  __shared__ uint64_t keys[kMaxTopLogprobs];
  __shared__ int count;
  const int r = blockIdx.x;
  const float* l = logits + int64_t(r) * V;
  const RowStats st = row_stats(l, V, s_val, s_id, s_sum);
  auto key_of = [&](int64_t i) { return order_key(l[i], i); };
  const uint64_t cut = block_select<true>(V, double(n) - 0.5, key_of, [](int64_t) { return 1.0; }, sh);
  if (threadIdx.x == 0) count = 0;
  __syncthreads();
  for (int64_t i = threadIdx.x; i < V; i += blockDim.x) {
    uint64_t k = key_of(i);
    if (k >= cut) {
      int slot = atomicAdd(&count, 1);
      if (slot < n) keys[slot] = k;
    }
  }
  __syncthreads();
  const int m = min(count, n);
  for (int j = threadIdx.x; j < m; j += blockDim.x) {
    int rank = 0;
    for (int q = 0; q < m; ++q) rank += keys[q] > keys[j];
    int id = int(0xFFFFFFFFu - uint32_t(keys[j] & 0xFFFFFFFFu));
    out_ids[int64_t(r) * n + rank] = id;
    out_logprobs[int64_t(r) * n + rank] = float(double(l[id]) - st.lse);
  }
}

__global__ void apply_penalties_kernel(float* logits, int64_t V, const PenaltyEntry* __restrict__ e, int n) {
  pdl_enter();
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) logits[int64_t(e[i].row) * V + e[i].token] -= e[i].delta;
}

void check_logits(const Tensor& logits, const char* op) {
  check_cuda_tensor(logits, op, "logits");
  check_dtype(logits, DType::F32, op, "logits");
  require(logits.cols() < int64_t(INT_MAX), op, ": vocabulary of ", logits.cols(), " is too large");
}

}  // namespace

size_t sample_scratch_bytes(int64_t rows, int64_t vocab) {
  return size_t(std::max<int64_t>(rows, 1) * slices_for(std::max<int64_t>(rows, 1), std::max<int64_t>(vocab, 1))) *
         sizeof(SliceStats);
}

void launch_sample(const Tensor& logits, const SamplingRow* d_rows, int num_rows, const Tensor& out_ids,
                   const Tensor& out_logprobs, void* scratch, size_t scratch_bytes, cudaStream_t stream) {
  check_logits(logits, "sample");
  check_cuda_tensor(out_ids, "sample", "out_ids");
  check_cuda_tensor(out_logprobs, "sample", "out_logprobs");
  check_dtype(out_ids, DType::I32, "sample", "out_ids");
  check_dtype(out_logprobs, DType::F32, "sample", "out_logprobs");
  require(logits.rows() == num_rows && out_ids.numel() == num_rows && out_logprobs.numel() == num_rows,
          "sample: ", logits.rows(), " logits rows, ", num_rows, " sampling rows, ", out_ids.numel(), " ids, ",
          out_logprobs.numel(), " logprobs");
  if (num_rows == 0) return;
  require(logits.cols() > 0, "sample: empty vocabulary");
  const int slices = slices_for(num_rows, logits.cols());
  require(scratch && scratch_bytes >= sample_scratch_bytes(num_rows, logits.cols()), "sample: scratch of ",
          scratch_bytes, " bytes, needs ", sample_scratch_bytes(num_rows, logits.cols()));
  auto* partial = static_cast<SliceStats*>(scratch);
  launch_pdl("slice_stats_kernel", slice_stats_kernel, dim3(slices, num_rows), kSliceThreads, 0, stream,
             logits.ptr<float>(), logits.cols(), slices, partial);
  launch_pdl("sample_kernel", sample_kernel, num_rows, kThreads, 0, stream, logits.ptr<float>(), logits.cols(), d_rows,
             out_ids.ptr<int>(), out_logprobs.ptr<float>(), partial, slices);
  GS_CUDA_LAUNCHED("sample");
}

void launch_top_logprobs(const Tensor& logits, int n, const Tensor& ids, const Tensor& logprobs, cudaStream_t stream) {
  check_logits(logits, "top_logprobs");
  check_cuda_tensor(ids, "top_logprobs", "ids");
  check_cuda_tensor(logprobs, "top_logprobs", "logprobs");
  check_dtype(ids, DType::I32, "top_logprobs", "ids");
  check_dtype(logprobs, DType::F32, "top_logprobs", "logprobs");
  const int64_t R = logits.rows(), V = logits.cols();
  require(n >= 1 && n <= V && n <= kMaxTopLogprobs, "top_logprobs: n = ", n, " outside [1, ",
          std::min<int64_t>(V, kMaxTopLogprobs), "]");
  require(ids.rows() == R && ids.cols() == n && logprobs.rows() == R && logprobs.cols() == n, "top_logprobs: ids ",
          ids.str(), " / logprobs ", logprobs.str(), " must be [", R, ", ", n, "]");
  if (R == 0) return;
  launch_pdl("top_logprobs_kernel", top_logprobs_kernel, unsigned(R), kThreads, 0, stream, logits.ptr<float>(), V, n,
             ids.ptr<int>(), logprobs.ptr<float>());
  GS_CUDA_LAUNCHED("top_logprobs");
}

void launch_apply_penalties(const Tensor& logits, const PenaltyEntry* d_entries, int num_entries, cudaStream_t stream) {
  check_logits(logits, "apply_penalties");
  if (num_entries == 0) return;
  launch_pdl("apply_penalties_kernel", apply_penalties_kernel, (num_entries + 255) / 256, 256, 0, stream,
             logits.ptr<float>(), logits.cols(), d_entries, num_entries);
  GS_CUDA_LAUNCHED("apply_penalties");
}

}  // namespace gs::cuda
