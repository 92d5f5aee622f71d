// Sampling kernels: one block per logits row (the row's max and Σ exp first by many blocks per
// row, slice_stats_kernel).
//
// The cpu backend sorts a row to apply top_k / top_p; a sort of 262144 logits per row would be
// the slowest part of a decode step here. Every filter keeps a prefix of the row in the order
// (z descending, id ascending), so each one is a cut in that order, found by a radix select
// (sampling_select.cuh): elements get a unique 64-bit key (order-preserving bits of z, then the
// complemented id), and 8-bit histogram passes find the element where the cumulative weight — a
// count for top_k, probability mass for top_p — crosses the target. The select runs over the few
// thousand candidates of a window of the row that must hold the cut (sampling_window.cuh), or over
// the whole row when no window fits. The last step is the Gumbel-max draw over the kept prefix.
#include <algorithm>
#include <cfloat>
#include <climits>
#include <cstdlib>
#include <string>

#include "kernels/cuda/device_math.cuh"
#include "kernels/cuda/launch_util.h"
#include "kernels/cuda/sampling.h"
#include "kernels/cuda/sampling_select.cuh"
#include "kernels/cuda/sampling_window.cuh"
#include "ops/logit_adjust.h"
#include "ops/sampling_rng.h"

namespace gs::cuda {
namespace {

using namespace sampling;

constexpr int kThreads = 1024;
static_assert(kThreads == kBins, "sampling_window.cuh: one bin per thread");

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

// At batch 1 one block cannot stream a 1 MB row fast (a single SM's load rate and expf
// throughput), so the row statistics of sample() are taken by many blocks, one slice of
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

// CTA 0's part of window_cut: the cut among the gathered keys w.keys[0, n).
__device__ bool cut_from_keys(float zmax, const SamplingRow& row, bool top_k, bool top_p, int n, double mass_in,
                              double mass_out, uint64_t& cut, WindowShared& w, SelectShared& sh, double* s_sum) {
  auto key = [&](int64_t i) { return w.keys[i]; };
  cut = 0;
  if (top_k) cut = block_select<true>(n, double(row.top_k) - 0.5, key, [](int64_t) { return 1.0; }, sh);
  if (top_p) {
    auto mass = [&](int64_t i) {
      const uint64_t k = w.keys[i];
      return k >= cut ? exp(double(key_value(k)) - double(zmax)) : -1.0;
    };
    double cand = 0.0;
    for (int i = threadIdx.x; i < n; i += blockDim.x) cand += fmax(mass(i), 0.0);
    cand = block_sum_f64(cand, s_sum);
    // After top_k every kept element is a candidate (mass_in = mass_out = 0): the cpu backend's
    // total over the top-k set. top_p alone: the cut must fall among the candidates.
    const double target = double(row.top_p) * (mass_in + cand + mass_out) - mass_in;
    if (!top_k && !(target > 0.0 && target <= cand)) return false;
    const uint64_t e = block_select<false>(n, target, key, mass, sh);
    if (e != 0) cut = e;
    else if (!top_k) return false;
  }
  return true;
}

// The cut (kept: key >= cut) of a filtered row from a window of candidates (sampling_window.cuh),
// the window in `win` and its keys in w.keys[0, n). false: the cut is not inside any window that
// fits; the caller selects over the whole row.
// In a team every CTA finds the same window and gathers its slice's keys; the cut is decided by
// CTA 0 (which holds all the keys) and the verdict handed to the others.
template <class ZOf>
__device__ bool window_cut(const float* l, const Team& team, float zmax, const ZOf& z_of, const SamplingRow& row,
                           bool top_k, bool top_p, Window& win, int& n, uint64_t& cut, WindowShared& w,
                           SelectShared& sh, int* s_id, float* s_val, double* s_sum) {
  win = find_window(l, team, zmax, z_of, top_k ? row.top_k : 0, row.top_p, w, s_id, s_val, s_sum);
  if (!win.ok) return false;
  double mass_in = 0.0, mass_out = 0.0;
  n = top_k ? gather_window<false>(l, team, zmax, z_of, win, w, mass_in, mass_out, s_sum)
            : gather_window<true>(l, team, zmax, z_of, win, w, mass_in, mass_out, s_sum);
  bool ok = true;
  if (team.rank == 0) ok = cut_from_keys(zmax, row, top_k, top_p, n, mass_in, mass_out, cut, w, sh, s_sum);
  if (team.size == 1) return ok;
  if (threadIdx.x == 0) w.verdict = ok;
  team.sync();
  ok = *team.at(&w.verdict, 0) != 0;
  team.sync();  // CTA 0's verdict has been read
  return ok;
}

__global__ void __launch_bounds__(kThreads) sample_kernel(const float* __restrict__ logits, int64_t V,
                                                          const SamplingRow* __restrict__ rows, int* out_ids,
                                                          float* out_logprobs, const SliceStats* __restrict__ partial,
                                                          int slices, bool use_window) {
  pdl_enter();
  __shared__ SelectShared sh;
  __shared__ WindowShared w;
  __shared__ float s_val[32];
  __shared__ int s_id[32];
  __shared__ double s_sum[32];
  // A cluster of CTAs per row when launched in clusters (launch_sample), else one block.
  const Team team = cluster_team(V);
  const int r = blockIdx.x / team.size;
  const float* l = logits + int64_t(r) * V;
  const SamplingRow row = rows[r];
  const RowStats st = combine_slices(l, partial + int64_t(r) * slices, slices, s_val, s_id, s_sum);

  int chosen = st.argmax;
  if (row.temperature > 0.f) {
    const float temp = row.temperature;
    const float zmax = st.max / temp;  // division is monotone: the largest z is the largest l's
    // Temperature 1 (Gemma's generation_config default) skips the IEEE division, ~8 instructions
    // per element and pass; v / 1 is v exactly, so the token is the same.
    const bool unit = temp == 1.f;
    auto z_of = [temp, unit](float v) { return unit ? v : v / temp; };
    const bool use_min_p = row.min_p > 0.f;
    const double min_z = use_min_p ? double(zmax) + log(double(row.min_p)) : 0.0;
    float best = -INFINITY;
    int best_i = INT_MAX;
    auto draw = [&](float z, int id) {  // Gumbel-max over the kept elements
      if (use_min_p && double(z) < min_z) return;
      const float g = z + rng::gumbel(rng::uniform(row.seed, row.step, uint64_t(id)));
      if (best_i == INT_MAX || g > best || (g == best && id < best_i)) best = g, best_i = id;
    };
    const bool top_k = row.top_k > 0 && row.top_k < V, top_p = row.top_p < 1.f;
    Window win{};
    int n = 0;
    uint64_t cut = 0;
    if ((top_k || top_p) && use_window && isfinite(zmax) &&
        window_cut(l, team, zmax, z_of, row, top_k, top_p, win, n, cut, w, sh, s_id, s_val, s_sum)) {
      for (int i = threadIdx.x; i < n; i += blockDim.x)  // n is 0 outside CTA 0
        if (w.keys[i] >= cut) draw(key_value(w.keys[i]), key_id(w.keys[i]));
      for_each_inside(l, team, zmax, z_of, win, draw);
    } else if (team.rank == 0) {
      // The whole row: each select pass streams it.
      cut = 0;
      auto key_of = [&](int64_t i) { return order_key(z_of(l[i]), i); };
      if (top_k) cut = block_select<true>(V, double(row.top_k) - 0.5, key_of, [](int64_t) { return 1.0; }, sh);
      if (top_p) {
        auto mass = [&](int64_t i) {
          const float z = z_of(l[i]);
          return order_key(z, i) >= cut ? exp(double(z) - double(zmax)) : -1.0;
        };
        const uint64_t e = block_select<false, true>(V, double(row.top_p), key_of, mass, sh);
        if (e != 0) cut = e;
      }
      for (int64_t i = threadIdx.x; i < V; i += blockDim.x) {
        const float z = z_of(l[i]);
        if (order_key(z, i) >= cut) draw(z, int(i));
      }
    }
    float g = -INFINITY;
    int id = block_argmax(best, best_i, s_val, s_id, &g);
    if (team.size > 1) {
      // The team's best draw, CTA 0 reading the others' in rank order (ties: the lowest id).
      if (threadIdx.x == 0) w.best_g = g, w.best_id = id;
      team.sync();
      for (int q = 1; q < team.size; ++q) {
        const float og = *team.at(&w.best_g, q);
        const int oid = *team.at(&w.best_id, q);
        if (oid != INT_MAX && (id == INT_MAX || og > g || (og == g && oid < id))) g = og, id = oid;
      }
      team.sync();  // the draws have been read
    }
    if (id != INT_MAX) chosen = id;
  }
  if (threadIdx.x == 0 && team.rank == 0) {
    out_ids[r] = chosen;
    out_logprobs[r] = float(double(l[chosen]) - st.lse);
  }
}

__global__ void __launch_bounds__(kThreads) top_logprobs_kernel(const float* __restrict__ logits, int64_t V, int n,
                                                                int* out_ids, float* out_logprobs, bool use_window) {
  pdl_enter();
  __shared__ SelectShared sh;
  __shared__ WindowShared w;
  __shared__ float s_val[32];
  __shared__ int s_id[32];
  __shared__ double s_sum[32];
  __shared__ uint64_t keys[kMaxTopLogprobs];
  __shared__ int count;
  const int r = blockIdx.x;
  const float* l = logits + int64_t(r) * V;
  const RowStats st = row_stats(l, V, s_val, s_id, s_sum);
  auto z_of = [](float v) { return v; };
  auto key_of = [&](int64_t i) { return order_key(l[i], i); };
  auto one = [](int64_t) { return 1.0; };
  // The top n from a window of candidates (sampling_window.cuh) when one fits, else the row.
  int n_cand = -1;
  if (use_window && isfinite(st.max)) {
    const Team lone = lone_team(V);
    const Window win = find_window(l, lone, st.max, z_of, n, 1.f, w, s_id, s_val, s_sum);
    double unused_in = 0.0, unused_out = 0.0;
    if (win.ok) n_cand = gather_window<false>(l, lone, st.max, z_of, win, w, unused_in, unused_out, s_sum);
  }
  const uint64_t cut = n_cand >= 0 ? block_select<true>(n_cand, double(n) - 0.5, [&](int64_t i) { return w.keys[i]; },
                                                        one, sh)
                                   : block_select<true>(V, double(n) - 0.5, key_of, one, sh);
  if (threadIdx.x == 0) count = 0;
  __syncthreads();
  auto keep = [&](uint64_t k) {
    if (k >= cut) {
      const int slot = atomicAdd(&count, 1);
      if (slot < n) keys[slot] = k;
    }
  };
  if (n_cand >= 0)
    for (int i = threadIdx.x; i < n_cand; i += blockDim.x) keep(w.keys[i]);
  else
    for (int64_t i = threadIdx.x; i < V; i += blockDim.x) keep(key_of(i));
  __syncthreads();
  const int m = min(count, n);
  for (int j = threadIdx.x; j < m; j += blockDim.x) {
    int rank = 0;
    for (int q = 0; q < m; ++q) rank += keys[q] > keys[j];
    const int id = key_id(keys[j]);
    out_ids[int64_t(r) * n + rank] = id;
    out_logprobs[int64_t(r) * n + rank] = float(double(l[id]) - st.lse);
  }
}

// One block per row; the steps are separated by barriers, so a token in both the entries and the
// prompt set sees its bias before its repetition penalty, and that before its presence/frequency.
// Tokens are distinct within each list and a token is `repeated` only outside the prompt set, so
// no two threads write the same logit in one step.
__global__ void adjust_logits_kernel(float* logits, int64_t V, const AdjustRowInfo* __restrict__ rows,
                                     const AdjustEntry* __restrict__ entries) {
  pdl_enter();
  const AdjustRowInfo row = rows[blockIdx.x];
  float* l = logits + int64_t(blockIdx.x) * V;
  const AdjustEntry* e = entries + row.first;
  for (int i = threadIdx.x; i < row.count; i += blockDim.x) {
    const float v = __fadd_rn(l[e[i].token], e[i].bias);
    l[e[i].token] = (e[i].flags & kAdjustBanned) ? -INFINITY : v;
  }
  if (row.repetition_penalty == 1.f) {
    __syncthreads();
    for (int i = threadIdx.x; i < row.count; i += blockDim.x)
      if (e[i].subtract != 0.f) l[e[i].token] = __fsub_rn(l[e[i].token], e[i].subtract);
    return;
  }
  __syncthreads();
  for (int i = threadIdx.x; i < row.prompt_set_size; i += blockDim.x) {
    const int t = row.prompt_set[i];
    l[t] = repetition_penalized(l[t], row.repetition_penalty);
  }
  __syncthreads();
  for (int i = threadIdx.x; i < row.count; i += blockDim.x) {
    float v = l[e[i].token];
    if (e[i].flags & kAdjustRepeated) v = repetition_penalized(v, row.repetition_penalty);
    if (e[i].subtract != 0.f) v = __fsub_rn(v, e[i].subtract);
    l[e[i].token] = v;
  }
}

// The policy's sampling.window off selects over whole rows, as before the window (A/B runs).
bool window_enabled() { return kernel_policy().sampling.window; }

// CTAs per row of sample_kernel: a cluster of up to 8 when the rows leave SMs idle (sm_90; the
// window's passes split over them, sampling_window.cuh), else 1. The policy's sampling.team
// forces 1, 2, 4 or 8 (A/B runs and tests).
int sample_team_size(int rows) {
  const int forced = kernel_policy().sampling.team;
  if (compute_capability_major() < 9 || !window_enabled()) return 1;
  if (forced) return forced;
  const int per_row = sm_count() / std::max(rows, 1);
  int n = 1;
  while (n < 8 && 2 * n <= per_row) n *= 2;
  return n;
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
  const int team = sample_team_size(num_rows);
  launch_pdl("sample_kernel", sample_kernel, dim3(num_rows * team), kThreads, 0, stream, dim3(team),
             logits.ptr<float>(), logits.cols(), d_rows, out_ids.ptr<int>(), out_logprobs.ptr<float>(), partial, slices,
             window_enabled());
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
             ids.ptr<int>(), logprobs.ptr<float>(), window_enabled());
  GS_CUDA_LAUNCHED("top_logprobs");
}

void launch_adjust_logits(const Tensor& logits, const AdjustRowInfo* d_rows, const AdjustEntry* d_entries,
                          cudaStream_t stream) {
  check_logits(logits, "adjust_logits");
  if (logits.rows() == 0) return;
  launch_pdl("adjust_logits_kernel", adjust_logits_kernel, unsigned(logits.rows()), 256, 0, stream,
             logits.ptr<float>(), logits.cols(), d_rows, d_entries);
  GS_CUDA_LAUNCHED("adjust_logits");
}

}  // namespace gs::cuda
