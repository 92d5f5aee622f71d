// Where a filtered row's cut can lie, found in a pass or two over the row, so that the exact
// selection (sampling_select.cuh's radix select, then the Gumbel draw) runs over a few thousand
// candidates in shared memory instead of over the whole row. Over whole rows the first radix digit
// (sign and exponent bits) puts a row into a handful of bins, and their contended shared atomics,
// plus a double exp per element, were the time (docs/kernel-policy.md, "Sampling window and team").
//
// Elements are binned by their distance below the row's largest z, dist = zmax - z, at 1/32 nat
// over [0, 32) (farther ones, -inf and NaN go past the last bin). The bin is a monotone function of
// z that keeps equal values together, so "bin < b" is a prefix of the key order (z descending, id
// ascending), as every filter's kept set is. Level 1 counts the bins exactly; a count bounds a
// bin's mass (its elements weigh between e^-(b+1)/32 and e^-b/32 of the largest), which brackets
// the bins where the cut lies:
//   - top_k = k: the bin where the count reaches k; every bin up to it is gathered, so top_p after
//     top_k and the draw see the whole top-k set;
//   - top_p alone: the bins where the cumulative mass can reach top_p of the total. If the bins up
//     to them hold few enough elements they are all gathered; otherwise only the bracket is, the
//     bins above it ("inside") are kept whole (their mass summed exactly, a double exp each, as
//     the cpu backend does, and visited again by the draw), and the bins past it enter the total
//     as f32 exps summed in double (at most 1 - top_p of the total, so they move it by ~1e-8 of
//     itself at most).
// A bracket too crowded to gather (a flat row: a random-weight model puts its whole vocabulary
// within a nat or two) is zoomed once: its bins are spread over kBins sub-bins whose masses are
// summed, and the window is placed there. The caller checks that the exact cut lands inside the
// window and otherwise falls back to the whole-row select: the window decides how fast a token is
// drawn, never which.
//
// A row's passes may be shared by a team: the CTAs of a thread-block cluster (sm_90), each
// streaming its own slice of the row. What a pass finds (bin counts and masses, mass sums,
// gathered keys) is merged through distributed shared memory, every CTA reading the others' parts
// in rank order, so each arrives at the same numbers and the same window; the exact selection and
// the draw over the candidates then run in CTA 0. A block alone spends ~50 instructions per
// element and pass (binning, exps, warp matches), so a single row's passes leave most SMs idle.
#pragma once
#include <cstdint>

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#include <cooperative_groups.h>
#define GS_SAMPLING_TEAMS 1
#endif

#include "kernels/cuda/sampling_select.cuh"

namespace gs::cuda::sampling {

constexpr int kBins = 1024;  // one per thread of the sampling block
constexpr float kBinsPerNat = 32.f;
constexpr int kMaxCandidates = 3072;  // 24 KB of keys
constexpr double kMassMargin = 1e-3;  // relative error allowed to the zoom's f32 masses

struct WindowShared {
  int count[kBins];   // elements per bin; after scan_bins, of bins 0..b
  float mass[kBins];  // mass per bin (a bound at level 1, f32 sums in a zoom); after scan_bins, of bins 0..b
  uint64_t keys[kMaxCandidates];
  int n_keys;
  int first;  // first_bin_reaching's answer
  double part[2];  // this CTA's share of a pass's sums, for the team to merge
  int verdict;     // CTA 0's: whether the window holds the cut
  float best_g;    // this CTA's draw: best Gumbel score and its id
  int best_id;
};

// The CTAs that share a row (a cluster on sm_90; otherwise, or when launched without one, a lone
// block) and this CTA's slice of the row, [begin, end): a multiple of 4 elements long, so the
// float4 loads stay aligned.
struct Team {
  int rank = 0, size = 1;
  int begin = 0, end = 0;  // rows are shorter than INT_MAX (check_logits)
  // Barrier of the whole team (and of this block).
  __device__ void sync() const {
#ifdef GS_SAMPLING_TEAMS
    if (size > 1) {
      cooperative_groups::this_cluster().sync();
      return;
    }
#endif
    __syncthreads();
  }
  // p's counterpart in the shared memory of CTA r.
  template <class T>
  __device__ T* at(T* p, int r) const {
#ifdef GS_SAMPLING_TEAMS
    if (size > 1) return cooperative_groups::this_cluster().map_shared_rank(p, r);
#endif
    return p;
  }
};
__device__ inline Team lone_team(int64_t V) { return Team{0, 1, 0, int(V)}; }
// This CTA's place in its cluster (a lone block outside one).
__device__ inline Team cluster_team(int64_t V) {
  Team t = lone_team(V);
#ifdef GS_SAMPLING_TEAMS
  const cooperative_groups::cluster_group c = cooperative_groups::this_cluster();
  t.size = int(c.num_blocks()), t.rank = int(c.block_rank());
#endif
  const int64_t len = ((V + t.size - 1) / t.size + 3) & ~int64_t(3);
  t.begin = int(min(V, t.rank * len)), t.end = int(min(V, t.begin + len));
  return t;
}

// Calls f(i, l[i]) for every element of the row. One block streams a whole row, so each thread
// issues U float4 loads before using them (32 KB in flight per block): a plain strided loop keeps
// 4 KB in flight and is bound by memory latency (~0.15 ms a pass over a 1 MB row).
// Over the team's slice [t.begin, t.end) of the row.
template <class F>
__device__ __forceinline__ void for_each_logit(const float* l, const Team& t, F&& f) {
  constexpr int U = 2;  // 4 spills at the 64 registers of a 1024-thread block
  const int64_t bd = blockDim.x, b0 = t.begin, n = t.end - t.begin;
  if ((n & 3) == 0 && (b0 & 3) == 0 && (reinterpret_cast<uintptr_t>(l) & 15) == 0) {
    const float4* l4 = reinterpret_cast<const float4*>(l + b0);
    const int64_t n4 = n >> 2;
    for (int64_t base = threadIdx.x; base < n4; base += bd * U) {
      float4 v[U];
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (base + u * bd < n4) v[u] = l4[base + u * bd];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int64_t j = b0 + 4 * (base + u * bd);
        if (base + u * bd < n4) f(j, v[u].x), f(j + 1, v[u].y), f(j + 2, v[u].z), f(j + 3, v[u].w);
      }
    }
  } else {
    for (int64_t base = threadIdx.x; base < n; base += bd * U) {
      float v[U];
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (base + u * bd < n) v[u] = l[b0 + base + u * bd];
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (base + u * bd < n) f(b0 + base + u * bd, v[u]);
    }
  }
}

// After each CTA has its partial counts (kMass: and masses) in w and its sum in w.part[0]: every
// CTA's w holds the team's, added in rank order (the same order everywhere, so the same f32 and
// f64 results in every CTA).
template <bool kMass>
__device__ void merge_bins(const Team& t, WindowShared& w) {
  t.sync();
  int c = 0;
  float m = 0.f;
  double p = 0.0;
  for (int r = 0; r < t.size; ++r) {
    c += t.at(w.count, r)[threadIdx.x];
    if constexpr (kMass) m += t.at(w.mass, r)[threadIdx.x];
    p += t.at(w.part, r)[0];
  }
  t.sync();  // every CTA has read the others' parts
  w.count[threadIdx.x] = c;
  if constexpr (kMass) w.mass[threadIdx.x] = m;
  if (threadIdx.x == 0) w.part[0] = p;
  __syncthreads();
}

// floor(d) in [0, n); n for d >= n and NaN.
__device__ __forceinline__ int bin_index(float d, int n) { return d < float(n) ? (d > 0.f ? int(d) : 0) : n; }

// A zoom spreads the level-1 bins [first, last] over kBins sub-bins (last < first: none).
struct Zoom {
  int first = 0, last = -1;
  float scale = 0.f;  // sub-bins per level-1 bin
  __device__ bool on() const { return last >= first; }
};

// An element's place in bin order: its level-1 bin, or inside a zoom first + its sub-bin (bins
// after the zoom follow it). Monotone in z and equal for equal z, so "ord < x" is a prefix of the
// key order.
__device__ __forceinline__ int ord_of(float zmax, float z, const Zoom& zm) {
  const float d = (zmax - z) * kBinsPerNat;
  const int b = bin_index(d, kBins);
  if (!zm.on() || b < zm.first) return b;
  if (b > zm.last) return b - zm.last - 1 + zm.first + kBins;
  return zm.first + min(bin_index((d - float(zm.first)) * zm.scale, kBins), kBins - 1);
}

// Level 1: exact counts per bin, a warp adding each distinct bin once (a flat row puts most of its
// elements into a few bins, whose atomics would otherwise serialise), and for top_p the row's total
// mass Σ exp(z - zmax) (thread sums: no atomics). Each bin's mass is bounded by its count: its
// elements lie within 1/32 nat, so no per-element mass is binned.
template <bool kMass, class ZOf>
__device__ double count_bins(const float* l, const Team& team, float zmax, const ZOf& z_of, WindowShared& w,
                             double* s_sum) {
  w.count[threadIdx.x] = 0;  // blockDim.x == kBins
  __syncthreads();
  float total = 0.f;
  for_each_logit(l, team, [&](int64_t, float v) {
    const float z = z_of(v);
    if constexpr (kMass) total += expf(z - zmax);  // a NaN poisons it: no window, the caller falls back
    const int b = bin_index((zmax - z) * kBinsPerNat, kBins);
    const unsigned peers = __match_any_sync(__activemask(), b);
    if (b < kBins && int(threadIdx.x & 31) == __ffs(peers) - 1) atomicAdd(&w.count[b], __popc(peers));
  });
  const double t = kMass ? block_sum_f64(total, s_sum) : 0.0;
  if (threadIdx.x == 0) w.part[0] = t;
  merge_bins<false>(team, w);
  return w.part[0];
}

// A zoom's level: counts and f32 masses of its sub-bins, and the mass of the elements before it.
template <bool kMass, class ZOf>
__device__ double zoom_bins(const float* l, const Team& team, float zmax, const ZOf& z_of, const Zoom& zm,
                            WindowShared& w, double* s_sum) {
  w.count[threadIdx.x] = 0, w.mass[threadIdx.x] = 0.f;
  __syncthreads();
  float before = 0.f;
  for_each_logit(l, team, [&](int64_t, float v) {
    const float z = z_of(v);
    const int o = ord_of(zmax, z, zm) - zm.first;
    if (o < 0) {
      if constexpr (kMass) before += expf(z - zmax);
    } else if (o < kBins) {
      atomicAdd(&w.count[o], 1);
      if constexpr (kMass) atomicAdd(&w.mass[o], expf(z - zmax));
    }
  });
  const double b = kMass ? block_sum_f64(before, s_sum) : 0.0;
  if (threadIdx.x == 0) w.part[0] = b;
  merge_bins<kMass>(team, w);
  return w.part[0];
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

// The elements of ords [lo, hi] are gathered; those of ords below lo are kept whole.
struct Window {
  int lo, hi;
  Zoom zoom;
  bool ok;
};

// Where the cut lies: by count (need > 0: top_k, top_logprobs; every bin up to it gathered) or by
// mass (need 0: top_p of the row's total). Level 1 bounds each bin's mass by its count (elements
// of bin b weigh between e^-(b+1)/32 and e^-b/32), which brackets the crossing; when the bracket
// holds too many elements it is zoomed once into kBins sub-bins with their masses summed. ok
// false: no window fits (huge groups of equal logits): the whole-row select.
template <class ZOf>
__device__ Window find_window(const float* l, const Team& team, float zmax, const ZOf& z_of, int need, float top_p,
                              WindowShared& w, int* s_id, float* s_val, double* s_sum) {
  const Window none{0, 0, Zoom{}, false};
  const bool by_mass = need <= 0;
  const double total =
      by_mass ? count_bins<true>(l, team, zmax, z_of, w, s_sum) : count_bins<false>(l, team, zmax, z_of, w, s_sum);
  w.mass[threadIdx.x] = float(w.count[threadIdx.x]) * expf(-float(threadIdx.x) / kBinsPerNat);  // upper bound
  scan_bins(w, s_id, s_val);
  const double t = double(top_p) * total;
  int lo, hi;
  if (by_mass) {
    if (!(t > 0.0)) return none;
    // The true cumulative mass C(b) lies in [shrink·U(b), U(b)] for the upper-bound scan U: the
    // crossing is at or after the first bin with U >= t, at or before the first with shrink·U >= t
    // (past the bins: clamped, and the exact check after the gather decides).
    const double shrink = exp(-1.0 / kBinsPerNat), slack = 1e-5;
    lo = first_bin_reaching(w.mass, t * (1.0 - slack), w);
    hi = first_bin_reaching(w.mass, fmin(t * (1.0 + slack) / shrink, double(w.mass[kBins - 1])), w);
  } else {
    hi = first_bin_reaching(w.count, double(need) - 0.5, w);
    if (hi == kBins) return none;  // the need-th element is 32 nats or more below the top
    lo = hi;
  }
  if (w.count[hi] <= kMaxCandidates) return Window{0, hi, Zoom{}, true};
  if (by_mass && w.count[hi] - (lo > 0 ? w.count[lo - 1] : 0) <= kMaxCandidates) return Window{lo, hi, Zoom{}, true};

  const Zoom zm{lo, hi, float(kBins) / float(hi - lo + 1)};
  const int c_before = lo > 0 ? w.count[lo - 1] : 0;
  __syncthreads();  // every thread has read the level-1 bins
  const double m_before = by_mass ? zoom_bins<true>(l, team, zmax, z_of, zm, w, s_sum)
                                  : zoom_bins<false>(l, team, zmax, z_of, zm, w, s_sum);
  scan_bins(w, s_id, s_val);
  if (by_mass) {
    hi = first_bin_reaching(w.mass, fmin(t * (1.0 + kMassMargin) - m_before, double(w.mass[kBins - 1])), w);
    lo = first_bin_reaching(w.mass, t * (1.0 - kMassMargin) - m_before, w);
  } else {
    hi = first_bin_reaching(w.count, double(need) - 0.5 - c_before, w);
    lo = 0;
  }
  if (hi == kBins || lo > hi) return none;
  if (c_before + w.count[hi] <= kMaxCandidates) return Window{0, zm.first + hi, zm, true};
  if (by_mass && w.count[hi] - (lo > 0 ? w.count[lo - 1] : 0) <= kMaxCandidates)
    return Window{zm.first + lo, zm.first + hi, zm, true};
  return none;
}

// The keys of the window's elements into w.keys (order_key(z, i)); for top_p the exact mass of
// the ords below it (mass_in) and the estimate of those past it (mass_out). Returns how many keys
// (<= kMaxCandidates by the window's choice). In a team, CTA 0 ends up with every CTA's keys and
// sums; the others return 0 keys.
template <bool kMass, class ZOf>
__device__ int gather_window(const float* l, const Team& team, float zmax, const ZOf& z_of, const Window& win,
                             WindowShared& w, double& mass_in, double& mass_out, double* s_sum) {
  if (threadIdx.x == 0) w.n_keys = 0;
  __syncthreads();
  double in = 0.0, out = 0.0;
  for_each_logit(l, team, [&](int64_t i, float v) {
    const float z = z_of(v);
    const int o = ord_of(zmax, z, win.zoom);
    if (o < win.lo) {
      if constexpr (kMass) in += exp(double(z) - double(zmax));
    } else if (o <= win.hi) {
      const int slot = atomicAdd(&w.n_keys, 1);
      if (slot < kMaxCandidates) w.keys[slot] = order_key(z, i);
    } else if constexpr (kMass) {
      out += double(expf(z - zmax));
    }
  });
  if constexpr (kMass) {
    in = block_sum_f64(in, s_sum);
    out = block_sum_f64(out, s_sum);
  }
  if (threadIdx.x == 0) w.part[0] = in, w.part[1] = out;
  team.sync();
  int n = min(w.n_keys, kMaxCandidates);
  if (team.rank == 0) {
    // The others' keys after this CTA's own (their counts add up to the window's exact count).
    for (int r = 1; r < team.size; ++r) {
      const int nr = min(*team.at(&w.n_keys, r), kMaxCandidates - n);
      const uint64_t* keys = team.at(w.keys, r);
      for (int i = threadIdx.x; i < nr; i += blockDim.x) w.keys[n + i] = keys[i];
      n += nr;
    }
    in = 0.0, out = 0.0;
    for (int r = 0; r < team.size; ++r) in += team.at(w.part, r)[0], out += team.at(w.part, r)[1];
  }
  team.sync();  // the others' keys and sums have been read
  mass_in = in, mass_out = out;
  return team.rank == 0 ? n : 0;
}

// Calls visit(z, i) for every element of the ords below the window (kept whole).
template <class ZOf, class Visit>
__device__ void for_each_inside(const float* l, const Team& team, float zmax, const ZOf& z_of, const Window& win,
                                Visit&& visit) {
  if (win.lo == 0) return;
  for_each_logit(l, team, [&](int64_t i, float v) {
    const float z = z_of(v);
    if (ord_of(zmax, z, win.zoom) < win.lo) visit(z, int(i));
  });
}

}  // namespace gs::cuda::sampling
