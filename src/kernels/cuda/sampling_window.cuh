// Where a filtered row's cut can lie, found in one pass over the row, so that the exact selection
// (sampling_select.cuh's radix select, then the Gumbel draw) runs over a few thousand candidates
// in shared memory instead of over the whole row. Over whole rows, top_p alone took 2.26 ms at
// 64 x 262144 (H200, 2026-11-25), at batch 1 as at batch 64 (one block per row): the first radix
// digit (sign and exponent bits) puts a row into a handful of bins, and their contended shared
// atomics, plus a double exp per element, were the time.
//
// The pass bins every element by its distance below the row's largest z, dist = zmax - z, at
// 1/32 nat over [0, 32) (farther ones are only summed). The bin is a monotone function of z that
// keeps equal values together, so "bin < b" is a prefix of the key order (z descending, id
// ascending), as every filter's kept set is. From the bins' counts (exact) and masses (f32, only to
// place the window) a scan finds the bins where the cut must lie:
//   - top_k = k: the bin where the count reaches k; every bin up to it is gathered, so top_p after
//     top_k and the draw see the whole top-k set;
//   - top_p alone: the bin where the mass reaches top_p of the total, widened by kMassMargin of the
//     total on each side for the f32 estimate. If the bins up to it hold few enough elements they
//     are all gathered; otherwise only the window is, the bins above it ("inside": kept whole) are
//     summed exactly (a double exp each, as the cpu backend does) and visited again by the draw,
//     and the bins past it enter the total as f32 exps summed in double (their share of the total
//     is at most 1 - top_p, so it moves the total by ~1e-8 of itself at most).
// The caller checks that the exact cut lands inside the window and otherwise falls back to the
// whole-row select: the window decides how fast a token is drawn, never which.
#pragma once
#include "kernels/cuda/sampling_select.cuh"

namespace gs::cuda::sampling {

constexpr int kBins = 1024;  // one per thread of the sampling block
constexpr float kBinsPerNat = 32.f;
constexpr int kMaxCandidates = 3072;  // 24 KB of keys
constexpr double kMassMargin = 1e-3;  // relative error allowed to the f32 mass estimate

struct WindowShared {
  int count[kBins];   // elements per bin; after scan_bins, of bins 0..b
  float mass[kBins];  // Σ exp(z - zmax) per bin (top_p only); after scan_bins, of bins 0..b
  uint64_t keys[kMaxCandidates];
  int n_keys;
  int first;       // first_bin_reaching's answer
  float far_mass;  // Σ exp(z - zmax) of the elements past the last bin
};

// The bin of z; kBins: 32 nats or more below zmax, -inf or NaN.
__device__ __forceinline__ int dist_bin(float zmax, float z) {
  const float d = (zmax - z) * kBinsPerNat;
  return d < float(kBins) ? (d > 0.f ? int(d) : 0) : kBins;
}

// Pass 1: elements (and for top_p, masses) per bin. z_of(i) is element i's z.
template <bool kMass, class ZOf>
__device__ void bin_row(int64_t V, float zmax, const ZOf& z_of, WindowShared& w, double* s_sum) {
  w.count[threadIdx.x] = 0, w.mass[threadIdx.x] = 0.f;  // blockDim.x == kBins
  __syncthreads();
  float far = 0.f;
  for (int64_t i = threadIdx.x; i < V; i += blockDim.x) {
    const float z = z_of(i);
    const int b = dist_bin(zmax, z);
    if (b < kBins) {
      atomicAdd(&w.count[b], 1);
      if constexpr (kMass) atomicAdd(&w.mass[b], expf(z - zmax));
    } else if constexpr (kMass) {
      far += expf(z - zmax);  // a NaN poisons the total: the window fails and the caller falls back
    }
  }
  if constexpr (kMass) {
    const double f = block_sum_f64(far, s_sum);
    if (threadIdx.x == 0) w.far_mass = float(f);
  }
  __syncthreads();
}

// Counts and masses of bins 0..b, in place (thread t owns bin t). s_c, s_m: 32 each.
__device__ __forceinline__ void scan_bins(WindowShared& w, int* s_c, float* s_m) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  auto warp_scan = [&](int& c, float& m) {
    for (int o = 1; o < 32; o <<= 1) {
      const int oc = __shfl_up_sync(0xffffffffu, c, o);
      const float om = __shfl_up_sync(0xffffffffu, m, o);
      if (lane >= o) c += oc, m += om;
    }
  };
  int c = w.count[threadIdx.x];
  float m = w.mass[threadIdx.x];
  warp_scan(c, m);
  if (lane == 31) s_c[warp] = c, s_m[warp] = m;
  __syncthreads();
  if (warp == 0) {
    int wc = s_c[lane];
    float wm = s_m[lane];
    warp_scan(wc, wm);
    s_c[lane] = wc, s_m[lane] = wm;
  }
  __syncthreads();
  if (warp > 0) c += s_c[warp - 1], m += s_m[warp - 1];
  w.count[threadIdx.x] = c, w.mass[threadIdx.x] = m;
  __syncthreads();
}

// The first bin whose cumulative value (after scan_bins) reaches target; kBins if none.
template <typename T>
__device__ int first_bin_reaching(const T* cum, double target, WindowShared& w) {
  if (threadIdx.x == 0) w.first = kBins;
  __syncthreads();
  // The f32 scan need not be monotone to the last bit: take the first bin, not "the" bin.
  if (double(cum[threadIdx.x]) >= target) atomicMin(&w.first, int(threadIdx.x));
  __syncthreads();
  const int r = w.first;
  __syncthreads();
  return r;
}

// Bins [lo, hi] hold the cut; the bins below lo are kept whole. ok: the candidates fit.
struct Window {
  int lo, hi;
  bool ok;
};

// The bins holding the first `need` elements (top_k, top_logprobs), all of them gathered.
__device__ Window count_window(WindowShared& w, int need) {
  Window win{0, first_bin_reaching(w.count, double(need) - 0.5, w), false};
  win.ok = win.hi < kBins && w.count[win.hi] <= kMaxCandidates;
  return win;
}

// The bins where the mass reaches top_p of the row's total (top_p alone).
__device__ Window mass_window(WindowShared& w, float top_p) {
  const double in_bins = w.mass[kBins - 1], t = double(top_p) * (in_bins + double(w.far_mass));
  Window win{0, 0, false};
  if (!(t > 0.0)) return win;  // NaN logits
  // Past the last bin lies at most V·e^-32 of the largest element's mass: a cut there is for the
  // whole-row select.
  win.hi = first_bin_reaching(w.mass, fmin(t * (1.0 + kMassMargin), in_bins), w);
  if (w.count[win.hi] > kMaxCandidates) win.lo = first_bin_reaching(w.mass, t * (1.0 - kMassMargin), w);
  win.ok = win.lo <= win.hi && w.count[win.hi] - (win.lo > 0 ? w.count[win.lo - 1] : 0) <= kMaxCandidates;
  return win;
}

// Pass 2: the keys of the window's elements into w.keys (order_key(z, i)); for top_p the exact
// mass of the bins below lo (mass_in) and the estimate of those past hi (mass_out). Returns how
// many keys (the window's count, <= kMaxCandidates by its choice).
template <bool kMass, class ZOf>
__device__ int gather_window(int64_t V, float zmax, const ZOf& z_of, Window win, WindowShared& w, double& mass_in,
                             double& mass_out, double* s_sum) {
  if (threadIdx.x == 0) w.n_keys = 0;
  __syncthreads();
  const int lane = threadIdx.x & 31;
  double in = 0.0, out = 0.0;
  for (int64_t base = 0; base < V; base += blockDim.x) {  // whole warps, for the ballot
    const int64_t i = base + threadIdx.x;
    bool take = false;
    float z = 0.f;
    if (i < V) {
      z = z_of(i);
      const int b = dist_bin(zmax, z);
      take = b >= win.lo && b <= win.hi;
      if constexpr (kMass) {
        if (b < win.lo) in += exp(double(z) - double(zmax));
        else if (b > win.hi) out += double(expf(z - zmax));
      }
    }
    const unsigned ballot = __ballot_sync(0xffffffffu, take);
    if (ballot != 0u) {
      int slot = 0;
      if (lane == 0) slot = atomicAdd(&w.n_keys, __popc(ballot));
      slot = __shfl_sync(0xffffffffu, slot, 0) + __popc(ballot & ((1u << lane) - 1u));
      if (take && slot < kMaxCandidates) w.keys[slot] = order_key(z, i);
    }
  }
  if constexpr (kMass) {
    mass_in = block_sum_f64(in, s_sum);
    mass_out = block_sum_f64(out, s_sum);
  }
  __syncthreads();
  return min(w.n_keys, kMaxCandidates);
}

// Calls visit(z, i) for every element of the bins below lo (kept whole by the window).
template <class ZOf, class Visit>
__device__ void for_each_inside(int64_t V, float zmax, const ZOf& z_of, int lo, Visit&& visit) {
  if (lo == 0) return;
  for (int64_t i = threadIdx.x; i < V; i += blockDim.x) {
    const float z = z_of(i);
    if (dist_bin(zmax, z) < lo) visit(z, int(i));
  }
}

}  // namespace gs::cuda::sampling
