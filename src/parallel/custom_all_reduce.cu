// The one-shot all-reduce kernel (custom_all_reduce.h); the host side is custom_all_reduce.cpp.
#include <cuda_bf16.h>

#include "kernels/cuda/cuda_check.h"
#include "parallel/custom_all_reduce_kernel.h"
#include "parallel/peer_wait.cuh"

namespace gs::cuda {

namespace {

constexpr int kThreads = 512;
constexpr int kMaxRanks = PeerTable::kMaxRanks;

__device__ __forceinline__ void store_release_sys(uint32_t* p, uint32_t v) {
  asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ uint32_t load_acquire_sys(const uint32_t* p) {
  uint32_t v;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

template <typename T>
struct Vec;  // 16 bytes of T as floats
template <>
struct Vec<float> {
  static constexpr int n = 4;
  __device__ static void load(const uint4& u, float* f) {
    f[0] = __uint_as_float(u.x), f[1] = __uint_as_float(u.y), f[2] = __uint_as_float(u.z), f[3] = __uint_as_float(u.w);
  }
  __device__ static uint4 store(const float* f) {
    return make_uint4(__float_as_uint(f[0]), __float_as_uint(f[1]), __float_as_uint(f[2]), __float_as_uint(f[3]));
  }
};
template <>
struct Vec<__nv_bfloat16> {
  static constexpr int n = 8;
  __device__ static void load(const uint4& u, float* f) {
    const uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      f[2 * i] = __uint_as_float(w[i] << 16);
      f[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
    }
  }
  __device__ static uint4 store(const float* f) {
    uint32_t w[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const uint32_t lo = __bfloat16_as_ushort(__float2bfloat16_rn(f[2 * i]));
      const uint32_t hi = __bfloat16_as_ushort(__float2bfloat16_rn(f[2 * i + 1]));
      w[i] = lo | (hi << 16);
    }
    return make_uint4(w[0], w[1], w[2], w[3]);
  }
};

// Block b owns the same chunk of the message on every rank, so it only waits for the peers'
// blocks b: no grid-wide synchronisation. Blocks with an empty chunk still exchange flags.
template <typename T, int N>
__global__ void __launch_bounds__(kThreads) one_shot_kernel(PeerTable peers, int rank, uint32_t* epochs, uint4* x,
                                                            int64_t nvec, size_t half_bytes) {
  __shared__ uint32_t epoch_s;
  const int b = blockIdx.x;
  if (threadIdx.x == 0) epoch_s = epochs[b] + 1;
  __syncthreads();
  const uint32_t e = epoch_s;
  const size_t half = (e & 1u) ? half_bytes : 0;
  const int64_t per = (nvec + gridDim.x - 1) / gridDim.x, begin = b * per, end = min(nvec, begin + per);

  uint4* mine = reinterpret_cast<uint4*>(peers.buf[rank] + half);
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) mine[i] = x[i];
  __syncthreads();
  if (threadIdx.x < N) {
    const int p = threadIdx.x;
    // The release store is cumulative: the block's copies, ordered before it by the barrier above,
    // are visible to a peer that acquires the flag (no separate system-wide fence needed).
    store_release_sys(peers.flags[p] + b * kMaxRanks + rank, e);
    const uint32_t* f = peers.flags[rank] + b * kMaxRanks + p;
    const unsigned long long t0 = global_ns();
    while (int32_t(load_acquire_sys(f) - e) < 0)
      if (global_ns() - t0 > kPeerWaitLimitNs) __trap();  // a peer never came: fail instead of hanging
  }
  __syncthreads();

  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    float acc[Vec<T>::n], v[Vec<T>::n];
    Vec<T>::load(__ldcv(reinterpret_cast<const uint4*>(peers.buf[0] + half) + i), acc);
#pragma unroll
    for (int p = 1; p < N; ++p) {
      Vec<T>::load(__ldcv(reinterpret_cast<const uint4*>(peers.buf[p] + half) + i), v);
#pragma unroll
      for (int k = 0; k < Vec<T>::n; ++k) acc[k] += v[k];
    }
    x[i] = Vec<T>::store(acc);
  }
  if (threadIdx.x == 0) epochs[b] = e;
}

}  // namespace

void launch_one_shot_all_reduce(const PeerTable& peers, int ranks, int rank, uint32_t* epochs, void* x,
                                size_t bytes, bool bf16, size_t half_bytes, cudaStream_t stream) {
  const int64_t nvec = int64_t(bytes / 16);
  uint4* data = static_cast<uint4*>(x);
  // Always the whole grid, whatever the size: every block's epoch then advances in step, so all
  // blocks use the same buffer half, and a peer's block signalling epoch e+1 proves that its whole
  // kernel of epoch e (every block's reads) is over, since kernels on one stream run in order.
  auto launch = [&](auto kernel) {
    kernel<<<PeerTable::kBlocks, kThreads, 0, stream>>>(peers, rank, epochs, data, nvec, half_bytes);
  };
  switch (ranks) {
    case 2: bf16 ? launch(one_shot_kernel<__nv_bfloat16, 2>) : launch(one_shot_kernel<float, 2>); break;
    case 3: bf16 ? launch(one_shot_kernel<__nv_bfloat16, 3>) : launch(one_shot_kernel<float, 3>); break;
    case 4: bf16 ? launch(one_shot_kernel<__nv_bfloat16, 4>) : launch(one_shot_kernel<float, 4>); break;
    case 5: bf16 ? launch(one_shot_kernel<__nv_bfloat16, 5>) : launch(one_shot_kernel<float, 5>); break;
    case 6: bf16 ? launch(one_shot_kernel<__nv_bfloat16, 6>) : launch(one_shot_kernel<float, 6>); break;
    case 7: bf16 ? launch(one_shot_kernel<__nv_bfloat16, 7>) : launch(one_shot_kernel<float, 7>); break;
    default: bf16 ? launch(one_shot_kernel<__nv_bfloat16, 8>) : launch(one_shot_kernel<float, 8>); break;
  }
  GS_CUDA_LAUNCHED("custom_all_reduce");
}

}  // namespace gs::cuda
