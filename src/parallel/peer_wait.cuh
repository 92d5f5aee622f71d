// What the peer all-reduce kernels (custom_all_reduce.cu, lamport_all_reduce.cu) share for their
// waits on peers: the device clock and the bound after which a wait traps instead of hanging the
// step forever (a peer that never comes: a crashed rank, a broken peer mapping).
#pragma once

namespace gs::cuda {

constexpr unsigned long long kPeerWaitLimitNs = 20ull * 1000 * 1000 * 1000;

// Nanoseconds of the GPU's global timer.
__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

}  // namespace gs::cuda
