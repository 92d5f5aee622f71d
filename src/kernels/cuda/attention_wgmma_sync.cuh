// The synchronisation and copy primitives of the Hopper (sm_90a) attention kernels
// (attention_wgmma.cuh, attention_wgmma_persistent.cuh): shared-memory matrix descriptors, wgmma
// fences and waits, mbarriers, setmaxnreg, TMA loads and stores, cluster barriers; and the two
// register helpers their softmax and page lookups use. The wgmma instructions themselves are in
// attention_wgmma_ops.cuh.
#pragma once
#include <cuda.h>  // CUtensorMap (a type only: nothing of the driver library is linked)

#include <cstdint>

namespace gs::cuda::attn {

namespace wg {

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)

// Shared-memory matrix descriptor, 128-byte swizzle. K-major operands: SBO = 1024 bytes between
// 8-row groups, LBO unused (the k16 step lies inside one 128-byte line). MN-major (V): LBO = bytes
// between 64-column slabs, SBO = 1024 bytes between 8-key groups.
__device__ __forceinline__ uint64_t desc_sw128(uint32_t saddr, uint32_t lbo, uint32_t sbo) {
  return uint64_t((saddr >> 4) & 0x3FFF) | (uint64_t((lbo >> 4) & 0x3FFF) << 16) |
         (uint64_t((sbo >> 4) & 0x3FFF) << 32) | (uint64_t(1) << 62);
}

__device__ __forceinline__ void fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
// Waits until at most N committed wgmma groups of this warpgroup are still running.
template <int N>
__device__ __forceinline__ void wait() { asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory"); }
// Pins accumulator registers after a wait: the compiler must not read them before the wait.
template <int N>
__device__ __forceinline__ void pin(float (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
}
// Orders this thread's generic-proxy view of shared memory (cp.async and st.shared results)
// before its later async-proxy reads (wgmma operands).
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

__device__ __forceinline__ void mbar_init(uint32_t bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint32_t bar, int parity) {
  asm volatile(
      "{\n.reg .pred done;\n"
      "WAIT:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT;\n}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// Arrives on `bar` once every cp.async this thread issued so far has landed (no pending-count
// increment: the barrier's expected count includes this arrival).
__device__ __forceinline__ void mbar_arrive_cp_async(uint32_t bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
}
// Moves this warpgroup's register budget (all four warps execute it): producer down, consumers up.
template <int N>
__device__ __forceinline__ void setmaxnreg_dec() { asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N)); }
template <int N>
__device__ __forceinline__ void setmaxnreg_inc() { asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N)); }
// Arrives and adds `bytes` to the transactions the current phase waits for (TMA completions).
__device__ __forceinline__ void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
// One TMA box of a rank-3 tensor map into shared memory, completing on `bar`.
__device__ __forceinline__ void tma_load_3d(uint32_t dst, const CUtensorMap* map, int c0, int c1, int c2, uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
      : "memory");
}
// The same box multicast to the CTAs of `mask` (same shared-memory offsets, each CTA's own
// barrier at `bar`'s offset).
__device__ __forceinline__ void tma_load_3d_multicast(uint32_t dst, const CUtensorMap* map, int c0, int c1, int c2,
                                                      uint32_t bar, uint16_t mask) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%2, %3, %4}], [%5], %6;\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(bar), "h"(mask)
      : "memory");
}
// One TMA box from shared memory to a rank-3 tensor, in this thread's bulk group.
__device__ __forceinline__ void tma_store_3d(const CUtensorMap* map, uint32_t src, int c0, int c1, int c2) {
  asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%1, %2, %3}], [%4];\n" ::"l"(
                   reinterpret_cast<uint64_t>(map)),
               "r"(c0), "r"(c1), "r"(c2), "r"(src)
               : "memory");
}
// Commits this thread's bulk stores and waits until they have read their shared memory (the
// global writes may still be in flight: the CTA may exit).
__device__ __forceinline__ void tma_store_commit_and_wait_read() {
  asm volatile("cp.async.bulk.commit_group;\ncp.async.bulk.wait_group.read 0;\n" ::: "memory");
}
// Arrives on the barrier at the same offset in CTA `cta` of the cluster. Release at CTA scope
// (the default), as CUTLASS's cluster barriers do: what it orders is this warp's use of shared
// memory that the partner overwrites only after the arrival (wgmma reads already waited for,
// loads whose values are in registers). With .release.cluster each arrival waited for the
// thread's outstanding memory operations to be visible cluster-wide, ~0.6 us a call.
__device__ __forceinline__ void mbar_arrive_cluster(uint32_t bar, uint32_t cta) {
  uint32_t remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(bar), "r"(cta));
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];\n" ::"r"(remote) : "memory");
}
// The shared::cluster address of this CTA's shared-memory address `addr` in CTA `cta` of the cluster.
__device__ __forceinline__ uint32_t map_to_cta(uint32_t addr, uint32_t cta) {
  uint32_t remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(addr), "r"(cta));
  return remote;
}
// 16 bytes into another CTA's shared memory (`remote`, from map_to_cta), completed there as 16
// bytes of transactions on its barrier `remote_bar`.
__device__ __forceinline__ void st_async_v4(uint32_t remote, float x, float y, float z, float w, uint32_t remote_bar) {
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.f32 [%0], {%1, %2, %3, %4}, [%5];\n" ::"r"(
                   remote),
               "f"(x), "f"(y), "f"(z), "f"(w), "r"(remote_bar)
               : "memory");
}
__device__ __forceinline__ float4 ld_shared_v4(uint32_t addr) {
  float4 v;
  asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];\n"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "r"(addr)
               : "memory");
  return v;
}
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}
// A consumer thread's copy of the u-th use of a two-slot ring (slot u & 1) that a producer fills,
// arriving on `full`, and the consumer threads free, one arrival each on `empty` (the persistent
// kernels' work items, once per item: every thread's read is ordered before its own arrival, with
// no warp barrier between for racecheck to take on trust).
template <class T>
__device__ __forceinline__ T take_slot(const T* slots, int u, uint32_t full, uint32_t empty) {
  mbar_wait(full, (u >> 1) & 1);
  const T v = slots[u & 1];
  mbar_arrive(empty);
  return v;
}
__device__ __forceinline__ void consumer_bar_sync() { asm volatile("bar.sync 1, 256;\n" ::: "memory"); }

#endif

}  // namespace wg

// 2^x with denormal results flushed to zero: a single MUFU.EX2 (2^-inf = 0).
__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// v[i] of a register array by a run-time index, as selects (a dynamic index would put v in
// local memory).
template <class T, int N>
__device__ __forceinline__ T pick(const T (&v)[N], int i) {
  T x = v[0];
#pragma unroll
  for (int h = 1; h < N; ++h) x = i == h ? v[h] : x;
  return x;
}

}  // namespace gs::cuda::attn
