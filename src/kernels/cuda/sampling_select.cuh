// Block-wide building blocks of the sampling kernels (sampling.cu): order-preserving keys of
// (value, id) pairs, the radix select that finds where a filter cuts the key order, argmax and
// double-precision sums. Every function here is called by all threads of a block.
#pragma once
#include <cuda_runtime.h>

#include <cfloat>
#include <climits>
#include <cstdint>

namespace gs::cuda::sampling {

__device__ __forceinline__ uint32_t order_bits(float f) {
  uint32_t u = __float_as_uint(f);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

// Larger key = earlier in (value descending, id ascending). Never 0 for a real element.
__device__ __forceinline__ uint64_t order_key(float v, int64_t id) {
  return (uint64_t(order_bits(v)) << 32) | uint64_t(0xFFFFFFFFu - uint32_t(id));
}

// The value and id a key was made from (order_bits inverted: the exact float comes back).
__device__ __forceinline__ float key_value(uint64_t key) {
  const uint32_t o = uint32_t(key >> 32);
  return __uint_as_float((o & 0x80000000u) ? (o & 0x7FFFFFFFu) : ~o);
}
__device__ __forceinline__ int key_id(uint64_t key) { return int(0xFFFFFFFFu - uint32_t(key & 0xFFFFFFFFu)); }

struct SelectShared {
  double mass[256];
  int count[256];
  uint64_t prefix, mask, found;
  double above;
  int state;  // 0 searching, 1 one element left in the chosen bin, 2 target not reached
};

// Adds weight w and count 1 to bin b for each active lane; the weights with one shared-memory
// atomic per distinct bin of the warp (the whole warp calls). A row's elements crowd into a few
// bins (the first pass bins by sign and exponent), and contended shared atomics, the f64 ones
// above all, were most of a select's time (docs/kernel-policy.md, "Sampling window and team"). The peers' weights are summed by the warp first; the bins already
// received their weights in no fixed order, so the select's result is unchanged.
template <bool kCounts>
__device__ __forceinline__ void warp_histogram_add(bool active, int b, double w, SelectShared& sh) {
  const int lane = threadIdx.x & 31;
  if constexpr (kCounts) {
    // Native integer atomics: aggregating them (match_any) costs more than the contention it saves
    // (docs/kernel-policy.md, "Sampling window and team").
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
// shared atomics of the mass were most of a filtered sample's time).
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
// The block's largest v (ties: lowest id) as its id; *v_out: the value.
__device__ int block_argmax(float v, int id, float* s_val, int* s_id, float* v_out = nullptr) {
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
  if (v_out) *v_out = v;
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

}  // namespace gs::cuda::sampling
