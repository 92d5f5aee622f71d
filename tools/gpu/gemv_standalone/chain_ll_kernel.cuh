// The persistent GEMV chain of chain_ll_bench.cu (see there and docs/perf/decode.md,
// "2026-11-27 09:50-10:30Z"): links synchronised by LL flag words, weights streamed through a
// ring of shared-memory slots per warp. Included by chain_ll_bench.cu only.
#pragma once
#include <cuda_bf16.h>

#include <cstdint>

#include "kernels/cuda/device_math.cuh"
#include "kernels/cuda/gemv_device.cuh"

namespace chain_ll {

using gs::cuda::bf16;
using gs::cuda::gelu_tanh;
using gs::cuda::rnd;
using gs::cuda::gemv_impl::unpack8;


constexpr int kWarps = 16;  // one CTA of 512 threads an SM
constexpr int kThreads = kWarps * 32;
constexpr int kMaxUnits = 64;     // units (4 weight rows) a CTA may own in one link
constexpr int kMaxK = 12288;      // longest input
constexpr int kPollPerThread = kMaxK / 2 / kThreads;
constexpr int kMaxLinks = 256;

struct Link {
  const bf16* w;  // [N, K]
  int N, K;
  int gelu;       // w = [gate; up], output N/2 values gelu(gate)·up
  int P;          // k-parts per unit: each item is C chunks of 8 per lane
  uint2* out;     // LL words: (bf16 pair, flag)
  bf16* plain_in; // link 0 only: its input, plain bf16
};

__device__ __forceinline__ uint2 ld_ll(const uint2* p) {
  uint2 v;
  asm volatile("ld.volatile.global.v2.u32 {%0,%1}, [%2];" : "=r"(v.x), "=r"(v.y) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void st_ll(uint2* p, uint32_t data, uint32_t flag) {
  asm volatile("st.volatile.global.v2.u32 [%0], {%1,%2};" ::"l"(p), "r"(data), "r"(flag) : "memory");
}

// A CTA's units of a link and a warp's contiguous share of the CTA's (unit, part) items.
struct Share {
  int u0, nu, T, a, b;
};
// This CTA's units of one link, computed for every link at the kernel's start: the per-link path
// then has no division (each one is a chain of dependent instructions on the critical path).
struct CtaLink {
  uint16_t u0, nu, P, inv_p;  // inv_p = ceil(2^15 / P): a / P == (a * inv_p) >> 15 for a < 2^15 / P
};
__device__ __forceinline__ int div_p(int a, const CtaLink& c) { return (a * int(c.inv_p)) >> 15; }
__device__ __forceinline__ Share share_of(const CtaLink& c, int warp) {
  Share s;
  s.u0 = c.u0;
  s.nu = c.nu;
  s.T = s.nu * c.P;
  s.a = (warp * s.T) >> 4;  // kWarps = 16
  s.b = ((warp + 1) * s.T) >> 4;
  return s;
}

// A warp's walk over its items, link after link: the position in one link's share, with the
// unit's row pointers advanced incrementally (a division per item made the first version
// issue-bound: ~200 instructions of index arithmetic a 2 KB item).
struct Walk {
  int j;           // link (nlinks: past the end)
  int left;        // items left in the warp's share of link j
  int p, P;        // part within the unit, parts a unit
  int K8;          // chunks of 8 in a row
  int K;
  const bf16* r0;  // the unit's accumulators 0 and 1 read rows r0 and r0 + K
  const bf16* r2;  // 2 and 3: r2 and r2 + K
  int step;        // elements from one unit's r0 to the next one's
};

__device__ __forceinline__ void walk_enter(Walk& w, const Link* links, const CtaLink* tbl, int nlinks, int warp) {
  for (; w.j < nlinks; ++w.j) {
    const Share s = share_of(tbl[w.j], warp);
    if (s.a >= s.b) continue;
    const Link& L = links[w.j];
    w.left = s.b - s.a;
    w.P = L.P;
    w.K = L.K;
    w.K8 = L.K >> 3;
    const int ul = div_p(s.a, tbl[w.j]), unit = s.u0 + ul;
    w.p = s.a - ul * L.P;
    if (L.gelu) {  // gate rows 2u, 2u+1 and up rows I+2u, I+2u+1
      w.r0 = L.w + int64_t(2 * unit) * L.K;
      w.r2 = L.w + int64_t(L.N / 2 + 2 * unit) * L.K;
      w.step = 2 * L.K;
    } else {
      w.r0 = L.w + int64_t(4 * unit) * L.K;
      w.r2 = w.r0 + 2 * L.K;
      w.step = 4 * L.K;
    }
    return;
  }
}
__device__ __forceinline__ void walk_next(Walk& w, const Link* links, const CtaLink* tbl, int nlinks, int warp) {
  if (--w.left == 0) {
    ++w.j;
    walk_enter(w, links, tbl, nlinks, warp);
  } else if (++w.p == w.P) {
    w.p = 0;
    w.r0 += w.step;
    w.r2 += w.step;
  }
}
// The walk's item into this lane's slot: C chunks of 8 columns of the unit's 4 rows, copied by
// the lane that will read them (cp.async: no register held while in flight).
template <int C>
__device__ __forceinline__ void copy_item(const Walk& w, int lane, uint4* slot) {
#pragma unroll
  for (int i = 0; i < C; ++i) {
    const int ci = (w.p * C + i) * 32 + lane;
    if (ci < w.K8) {
      const bf16* src[4] = {w.r0 + ci * 8, w.r0 + w.K + ci * 8, w.r2 + ci * 8, w.r2 + w.K + ci * 8};
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const uint32_t dst = uint32_t(__cvta_generic_to_shared(slot + (i * 4 + r) * 32 + lane));
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(src[r]) : "memory");
      }
    }
  }
}
// The same item by the tensor memory accelerator instead: lane 0 issues one bulk copy a row
// (the item's C x 512 bytes of a row are contiguous) completing on the slot's mbarrier. The
// copies then go out through the TMA unit, not the load/store path the flags and polls use.
// Slot layout [row][C x 32 chunks].
template <int C>
__device__ __forceinline__ void copy_item_bulk(const Walk& w, int lane, uint4* slot, uint64_t* bar) {
  if (lane != 0) return;
  const int c0 = w.p * C * 32, nch = min(C * 32, w.K8 - c0);
  const uint32_t bytes = uint32_t(nch) * 16, b = uint32_t(__cvta_generic_to_shared(bar));
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(b), "r"(4 * bytes) : "memory");
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // the slot was just read by generic loads
  const bf16* src[4] = {w.r0 + c0 * 8, w.r0 + w.K + c0 * 8, w.r2 + c0 * 8, w.r2 + w.K + c0 * 8};
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const uint32_t dst = uint32_t(__cvta_generic_to_shared(slot + r * C * 32));
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 ::"r"(dst), "l"(src[r]), "r"(bytes), "r"(b) : "memory");
  }
}
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
  const uint32_t b = uint32_t(__cvta_generic_to_shared(bar));
  uint32_t done = 0;
  while (!done)
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                 : "=r"(done) : "r"(b), "r"(parity) : "memory");
}
// Asks L2 for the walk's item (lanes 0-3, a row each): what a CTA prefetches while it waits.
template <int C>
__device__ __forceinline__ void prefetch_item_l2(const Walk& w, int lane) {
  if (lane >= 4) return;
  const int c0 = w.p * C * 32, nch = min(C * 32, w.K8 - c0);
  const bf16* row = (lane & 2 ? w.r2 : w.r0) + (lane & 1 ? w.K : 0) + c0 * 8;
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(row), "r"(uint32_t(nch) * 16) : "memory");
}
__device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wait_pending() { asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory"); }

// Thread 0's clock at six points of each link, for CTAs 0-3: [0] before the poll, [1] after it,
// [2] after the items, [5] after the cross-warp sums, [4] before its store, [3] after the stores.
constexpr int kStampCtas = 4;
constexpr int kPrefetchItems = 8;
__device__ long long g_stamps[kStampCtas][kMaxLinks][6];
// Cycles each warp of CTAs 0-3 waited for its weight copies in link j: its first item ([0], the
// one right after the poll) and all its items ([1]). Long first waits mean the ring did not keep
// HBM busy while the CTA polled.
__device__ long long g_copy_wait[kStampCtas][kMaxLinks][kWarps][2];
__device__ __forceinline__ void stamp(int cta, int j, int k) {
  if (threadIdx.x == 0 && cta < kStampCtas) g_stamps[cta][j][k] = clock64();
}
// Every CTA's global time (ns) when its poll of link j completed ([0]) and when thread 0 left
// link j's stores ([1]): across CTAs, the producers' spread and the flags' trip to the consumers.
constexpr int kMaxCtas = 160;
__device__ unsigned long long g_timeline[kMaxLinks][kMaxCtas][2];
__device__ __forceinline__ void mark(int cta, int j, int k) {
  if (threadIdx.x == 0 && cta < kMaxCtas) {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)::"memory");
    g_timeline[j][cta][k] = t;
  }
}

constexpr int kLinkTableBytes = kMaxLinks * int(sizeof(Link));

// mode & 15: 0 polls the LL flags; 1 does not wait (wrong results: the arithmetic and streaming
// alone). var = mode >> 4, ablations and variants: 2 no stores, 4 no copy waits, 8 no FMAs,
// 16 no cross-warp sums, 32 no weight copies, 128 L2 prefetch of the next items at each poll.
// Each warp streams its items of every link, in order, through its own ring of D slots: the
// copies of the next link's first items are in flight while the CTA polls that link's input.
template <int C, int D, bool kBulk>
__global__ void __launch_bounds__(kThreads, 1)
    chain_ll_kernel(const Link* __restrict__ glinks, int nlinks, const uint32_t* __restrict__ epoch_ptr, int mode) {
  __shared__ __align__(16) bf16 xs[kMaxK];
  __shared__ float part[kMaxUnits][kWarps][4];
  extern __shared__ __align__(16) uint4 dyn[];
  // The link table in shared memory: a descriptor read from global memory on the critical path
  // (the cursor's first touch of a link) cost an L2 round trip.
  Link* links = reinterpret_cast<Link*>(dyn);
  uint4* ring = dyn + kLinkTableBytes / 16;
  for (int i = threadIdx.x; i < nlinks * int(sizeof(Link)) / 4; i += kThreads)
    reinterpret_cast<uint32_t*>(links)[i] = reinterpret_cast<const uint32_t*>(glinks)[i];
  __shared__ CtaLink tbl[kMaxLinks];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, cta = blockIdx.x, ctas = gridDim.x;
  for (int i = threadIdx.x; i < nlinks; i += kThreads) {
    const int U = glinks[i].N / 4, P = glinks[i].P;
    const int u0 = cta * U / ctas;  // 32-bit: U * ctas < 2^31 for every shape here
    tbl[i] = {uint16_t(u0), uint16_t((cta + 1) * U / ctas - u0), uint16_t(P), uint16_t((32768 + P - 1) / P)};
  }
  __syncthreads();
  const uint32_t epoch = *epoch_ptr;
  const int var = mode >> 4;  // ablations (main())
  uint4* my_ring = ring + warp * D * C * 4 * 32;
  __shared__ __align__(8) uint64_t bars[kWarps][8];
  if (kBulk) {
    if (lane == 0) {
      for (int d = 0; d < D; ++d)
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(uint32_t(__cvta_generic_to_shared(&bars[warp][d]))));
      asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncwarp();
  }

  Walk walk;
  walk.j = 0;
  walk_enter(walk, links, tbl, nlinks, warp);
  int issued = 0;  // items whose copies were issued (slot = index % D)
  auto issue_next = [&]() {
    if (walk.j < nlinks) {
      if (kBulk) {
        __syncwarp();  // every lane is done reading the slot
        if (!(var & 32)) copy_item_bulk<C>(walk, lane, my_ring + (issued % D) * C * 4 * 32, &bars[warp][issued % D]);
      } else if (!(var & 32)) {
        copy_item<C>(walk, lane, my_ring + (issued % D) * C * 4 * 32);
      }
      walk_next(walk, links, tbl, nlinks, warp);
      ++issued;
    }
    if (!kBulk) commit();  // an empty group past the end keeps the count uniform
  };
  for (int d = 0; d < D; ++d) issue_next();
  int consumed = 0;
  // var & 128: at each link's start, before its poll, the warp asks L2 for its items up to
  // kPrefetchItems past the copy cursor, so HBM keeps streaming while the CTA waits (the ring
  // alone is full of landed copies by then).
  Walk pf = walk;
  int pf_issued = issued;

  for (int j = 0; j < nlinks; ++j) {
    const Link L = links[j];
    const Share s = share_of(tbl[j], warp);
    if (s.nu == 0) continue;
    stamp(cta, j, 0);
    if (var & 128) {
      if (pf_issued < issued) {
        pf = walk;
        pf_issued = issued;
      }
      while (pf_issued < issued + kPrefetchItems && pf.j < nlinks) {
        prefetch_item_l2<C>(pf, lane);
        walk_next(pf, links, tbl, nlinks, warp);
        ++pf_issued;
      }
    }
    const uint32_t flag_in = epoch * 1024u + uint32_t(j);  // link j-1's flag
    // Poll the whole input: the load of each word is the wait for it.
    const int words = L.K >> 1;
    uint32_t* xw = reinterpret_cast<uint32_t*>(xs);
    if (j == 0) {
      for (int i = threadIdx.x; i < words; i += kThreads) xw[i] = reinterpret_cast<const uint32_t*>(L.plain_in)[i];
    } else {
      const uint2* in = links[j - 1].out;
      uint2 v[kPollPerThread];
#pragma unroll
      for (int k = 0; k < kPollPerThread; ++k) {
        const int i = threadIdx.x + k * kThreads;
        if (i < words) v[k] = ld_ll(in + i);
      }
      if ((mode & 15) == 0) {
        bool done;
        do {
          done = true;
#pragma unroll
          for (int k = 0; k < kPollPerThread; ++k) {
            const int i = threadIdx.x + k * kThreads;
            if (i < words && v[k].y != flag_in) {
              v[k] = ld_ll(in + i);
              done = false;
            }
          }
        } while (!done);
      }
#pragma unroll
      for (int k = 0; k < kPollPerThread; ++k) {
        const int i = threadIdx.x + k * kThreads;
        if (i < words) xw[i] = v[k].x;
      }
    }
    __syncthreads();
    stamp(cta, j, 1);
    mark(cta, j, 0);

    float acc[4] = {0.f, 0.f, 0.f, 0.f};
    const uint4* x4 = reinterpret_cast<const uint4*>(xs);
    const int chunks = L.K >> 3;
    int ul = div_p(s.a, tbl[j]), pi = s.a - ul * L.P;
    long long wait_first = 0, wait_all = 0;
    for (int t = s.a; t < s.b; ++t) {
      const long long w0 = clock64();
      if (kBulk) {
        if (!(var & 36)) mbar_wait(&bars[warp][consumed % D], uint32_t(consumed / D) & 1u);
      } else if (!(var & 4)) {
        wait_pending<D - 1>();  // this item's group is complete
      }
      const long long dw = clock64() - w0;
      wait_all += dw;
      if (t == s.a) wait_first = dw;
      const uint4* slot = my_ring + (consumed % D) * C * 4 * 32;
#pragma unroll
      for (int i = 0; i < C; ++i) {
        const int ci = (pi * C + i) * 32 + lane;
        if (ci < chunks && !(var & 8)) {
          float xf[8], wf[8];
          unpack8(x4[ci], xf);
#pragma unroll
          for (int r = 0; r < 4; ++r) {
            unpack8(slot[kBulk ? (r * C + i) * 32 + lane : (i * 4 + r) * 32 + lane], wf);
#pragma unroll
            for (int e = 0; e < 8; ++e) acc[r] = fmaf(wf[e], xf[e], acc[r]);
          }
        }
      }
      if (++pi == L.P || t + 1 == s.b) {
        // The four rows' warp sums in 5 shuffles: halves trade rows, then quarters; lane 8r
        // ends with row r's sum.
        const bool hi = lane & 16, mid = lane & 8;
        float a0 = hi ? acc[2] : acc[0], b0 = hi ? acc[0] : acc[2];
        float a1 = hi ? acc[3] : acc[1], b1 = hi ? acc[1] : acc[3];
        a0 += __shfl_xor_sync(0xffffffffu, b0, 16);
        a1 += __shfl_xor_sync(0xffffffffu, b1, 16);
        float c = mid ? a1 : a0;
        c += __shfl_xor_sync(0xffffffffu, mid ? a0 : a1, 8);
        c += __shfl_xor_sync(0xffffffffu, c, 4);
        c += __shfl_xor_sync(0xffffffffu, c, 2);
        c += __shfl_xor_sync(0xffffffffu, c, 1);
        if ((lane & 7) == 0) part[ul][warp][lane >> 3] = c;
#pragma unroll
        for (int r = 0; r < 4; ++r) acc[r] = 0.f;
        if (pi == L.P) {
          pi = 0;
          ++ul;
        }
      }
      ++consumed;
      issue_next();  // into the slot just read, after the flush: it is off the link's critical path
    }
    if (cta < kStampCtas && lane == 0) {
      g_copy_wait[cta][j][warp][0] = wait_first;
      g_copy_wait[cta][j][warp][1] = wait_all;
    }
    __syncthreads();
    stamp(cta, j, 2);

    // Each unit's rows: the partials of the warps whose shares touch it, summed by 16 lanes (one
    // per warp slot) in a fixed shuffle tree; a serial loop over the slots in one thread cost
    // ~2600 cycles a link on the critical path.
    const uint32_t flag_out = flag_in + 1u;
    const int words_per_unit = L.gelu ? 1 : 2;
    const int words_out = s.nu * words_per_unit;
    for (int base = 0; base < ((var & 16) ? 0 : words_out * 16); base += kThreads) {
      const int idx = base + threadIdx.x, o = idx >> 4, w = idx & 15;
      const int ul = o >> (words_per_unit - 1), half = o & (words_per_unit - 1);
      float v[4] = {0.f, 0.f, 0.f, 0.f};
      if (o < words_out) {
        const int a = (w * s.T) >> 4, b = ((w + 1) * s.T) >> 4;
        if (a < b && a < (ul + 1) * L.P && b > ul * L.P)
#pragma unroll
          for (int r = 0; r < 4; ++r) v[r] = part[ul][w][r];
      }
#pragma unroll
      for (int off = 8; off > 0; off >>= 1)
#pragma unroll
        for (int r = 0; r < 4; ++r) v[r] += __shfl_xor_sync(0xffffffffu, v[r], off);
      if (o < words_out && w == 0) {
        if (o == 0) stamp(cta, j, 5);
        float y0, y1;
        int64_t word;
        if (L.gelu) {
          const float g0 = rnd<bf16>(v[0]), g1 = rnd<bf16>(v[1]);
          y0 = rnd<bf16>(gelu_tanh(g0)) * rnd<bf16>(v[2]);
          y1 = rnd<bf16>(gelu_tanh(g1)) * rnd<bf16>(v[3]);
          word = s.u0 + ul;
        } else {
          y0 = half ? v[2] : v[0];  // not v[2 * half]: a dynamic index puts v in local memory
          y1 = half ? v[3] : v[1];
          word = int64_t(s.u0 + ul) * 2 + half;
        }
        __nv_bfloat162 p = __floats2bfloat162_rn(y0, y1);
        if (o == 0) stamp(cta, j, 4);
        if (!(var & 2)) st_ll(L.out + word, *reinterpret_cast<uint32_t*>(&p), flag_out);
      }
    }
    stamp(cta, j, 3);
    mark(cta, j, 1);
  }
}

}  // namespace chain_ll
