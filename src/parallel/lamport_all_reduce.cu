// The push all-reduce for small messages (custom_all_reduce.h, "Two kernels"), alone and fused with
// the residual add and RMSNorms that follow a row-parallel projection in every Gemma-4 block.
//
// Each rank stores its 16-byte vectors straight into every peer's receive buffer and polls its own
// buffer until every peer's vectors are there. A receive location holds the sentinel (all bits set:
// a NaN no arithmetic produces, and inputs equal to it are sent as another NaN) until a peer's value
// lands, so the data is its own flag: one NVLink write per vector and local reads, instead of a copy,
// a flag exchange and remote reads. The reader restores the sentinel right after reading, so every
// location is clean again before a peer can write it next: two slots alternate by epoch, and a peer
// can only reach epoch e + 2 (slot e again) after this rank has pushed epoch e + 1, which it does
// only once its epoch e kernel, clearing included, has finished.
#include <cuda_bf16.h>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_math.cuh"
#include "kernels/cuda/launch_util.h"
#include "parallel/custom_all_reduce_kernel.h"
#include "parallel/peer_wait.cuh"

namespace gs::cuda {

namespace {

constexpr uint32_t kSentinel = 0xffffffffu;
constexpr int kPlainThreads = 512;
constexpr int kPlainMaxBlocks = 32;

__device__ __forceinline__ uint4 load_volatile(const uint4* p) {
  uint4 v;
  asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p)
               : "memory");
  return v;
}
__device__ __forceinline__ void store_volatile(uint4* p, const uint4& v) {
  asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
               : "memory");
}

// Element lanes of a 16-byte vector: sentinel tests and the replacement of inputs equal to it.
template <typename T>
struct Lanes;
template <>
struct Lanes<float> {
  __device__ static bool any_sentinel(const uint4& v) {
    return v.x == kSentinel || v.y == kSentinel || v.z == kSentinel || v.w == kSentinel;
  }
  __device__ static uint32_t fix(uint32_t w) { return w == kSentinel ? 0x7fffffffu : w; }
};
template <>
struct Lanes<__nv_bfloat16> {
  __device__ static bool has(uint32_t w) { return (w & 0xffffu) == 0xffffu || (w >> 16) == 0xffffu; }
  __device__ static bool any_sentinel(const uint4& v) { return has(v.x) || has(v.y) || has(v.z) || has(v.w); }
  __device__ static uint32_t fix(uint32_t w) {
    if ((w & 0xffffu) == 0xffffu) w = (w & 0xffff0000u) | 0x7fffu;
    if ((w >> 16) == 0xffffu) w = (w & 0xffffu) | 0x7fff0000u;
    return w;
  }
};
template <typename T>
__device__ __forceinline__ uint4 sendable(uint4 v) {
  return make_uint4(Lanes<T>::fix(v.x), Lanes<T>::fix(v.y), Lanes<T>::fix(v.z), Lanes<T>::fix(v.w));
}

template <typename T>
__device__ __forceinline__ void unpack(const uint4& u, float (&f)[kVec<T>]) {
  const T* t = reinterpret_cast<const T*>(&u);
#pragma unroll
  for (int i = 0; i < kVec<T>; ++i) f[i] = to_f32(t[i]);
}

// Where rank `src`'s vector i of epoch slot `slot` lands in rank `dst`'s receive buffer.
__device__ __forceinline__ uint4* slot_vec(const LamportTable& t, int dst, int slot, int src, int64_t i) {
  return reinterpret_cast<uint4*>(t.recv[dst] + (size_t(slot) * t.ranks + src) * t.slot_bytes) + i;
}

// Pushes this rank's vector i to every peer, then sums all ranks' vector i in rank order (f32, the
// order of the one-shot kernel: identical bits on every rank and with NCCL at 2 ranks). The own
// vector never travels: it is summed from the register.
template <typename T, int N>
__device__ __forceinline__ void exchange_and_sum(const LamportTable& t, int rank, int slot, int64_t i, uint4 mine,
                                                 float (&acc)[kVec<T>]) {
  mine = sendable<T>(mine);
#pragma unroll
  for (int p = 0; p < N; ++p)
    if (p != rank) store_volatile(slot_vec(t, p, slot, rank, i), mine);
#pragma unroll
  for (int p = 0; p < N; ++p) {
    uint4 v = mine;
    if (p != rank) {
      uint4* at = slot_vec(t, rank, slot, p, i);
      const unsigned long long t0 = global_ns();
      while (Lanes<T>::any_sentinel(v = load_volatile(at)))
        if (global_ns() - t0 > kPeerWaitLimitNs) __trap();  // a peer never came: fail instead of hanging
      store_volatile(at, make_uint4(kSentinel, kSentinel, kSentinel, kSentinel));
    }
    float f[kVec<T>];
    unpack<T>(v, f);
#pragma unroll
    for (int k = 0; k < kVec<T>; ++k) acc[k] = p == 0 ? f[k] : acc[k] + f[k];
  }
}

// The epoch this launch uses; the grid's last block to finish advances it for the next launch.
__device__ __forceinline__ void finish_epoch(uint32_t* state, uint32_t e) {
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    if (atomicAdd(&state[1], 1u) == gridDim.x - 1) {
      state[1] = 0;
      state[0] = e + 1;
    }
  }
}

template <typename T, int N>
__global__ void __launch_bounds__(kPlainThreads) plain_kernel(LamportTable t, int rank, uint32_t* state, uint4* x,
                                                              int64_t nvec) {
  pdl_enter();
  const uint32_t e = *reinterpret_cast<volatile uint32_t*>(state);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < nvec; i += int64_t(gridDim.x) * blockDim.x) {
    float acc[kVec<T>];
    exchange_and_sum<T, N>(t, rank, int(e & 1u), i, x[i], acc);
    T out[kVec<T>];
#pragma unroll
    for (int k = 0; k < kVec<T>; ++k) out[k] = from_f32<T>(acc[k]);
    x[i] = *reinterpret_cast<const uint4*>(out);
  }
  finish_epoch(state, e);
}

// One block per row, one 16-byte vector per thread: o's row all-reduced (rounded to T, as the
// all-reduce stores it), then exactly norms.cu's rms_row_kernel (RowOp::Resid / ResidNext, U = 1):
// resid = (resid + norm(o)·w)·out_scale, and with next_w, next_out = norm(resid)·next_w.
template <typename T, int N, bool kNext>
__global__ void __launch_bounds__(1024) fused_kernel(LamportTable t, int rank, uint32_t* state, const T* o, T* resid,
                                                     const void* w, bool w_f32, int64_t cols, float eps,
                                                     float out_scale, const void* next_w, bool next_w_f32,
                                                     T* next_out) {
  constexpr int V = kVec<T>;
  __shared__ float scratch[32];
  const int64_t row = blockIdx.x, units = cols / V, j = threadIdx.x;
  const bool active = j < units;
  float wv[V], nwv[V];
  if (active) {
#pragma unroll
    for (int k = 0; k < V; ++k) {
      wv[k] = load_weight(w, w_f32, j * V + k);
      if constexpr (kNext) nwv[k] = load_weight(next_w, next_w_f32, j * V + k);
    }
  }
  pdl_enter();
  const uint32_t e = *reinterpret_cast<volatile uint32_t*>(state);
  const int64_t i = row * units + j;  // this thread's vector of the message
  float v[V], r[V];
  float sumsq = 0.f;
  if (active) {
    float acc[V];
    exchange_and_sum<T, N>(t, rank, int(e & 1u), i, reinterpret_cast<const uint4*>(o)[i], acc);
    load_vec(resid + row * cols + j * V, r);
#pragma unroll
    for (int k = 0; k < V; ++k) {
      v[k] = rnd<T>(acc[k]);
      sumsq += v[k] * v[k];
    }
  }
  const float inv = rsqrtf(block_sum(sumsq, scratch) / float(cols) + eps);
  float next_sumsq = 0.f;
  if (active) {
    float y[V];
#pragma unroll
    for (int k = 0; k < V; ++k) {
      y[k] = rnd<T>(v[k] * inv * wv[k]);
      const float s = rnd<T>(r[k] + y[k]);
      y[k] = out_scale != 1.f ? s * out_scale : s;
    }
    store_vec(resid + row * cols + j * V, y);
    if constexpr (kNext) {
#pragma unroll
      for (int k = 0; k < V; ++k) {
        v[k] = rnd<T>(y[k]);
        next_sumsq += v[k] * v[k];
      }
    }
  }
  if constexpr (kNext) {
    const float next_inv = rsqrtf(block_sum(next_sumsq, scratch) / float(cols) + eps);
    if (active) {
      float y[V];
#pragma unroll
      for (int k = 0; k < V; ++k) y[k] = rnd<T>(v[k] * next_inv * nwv[k]);
      store_vec(next_out + row * cols + j * V, y);
    }
  }
  finish_epoch(state, e);
}

template <int N>
void launch_plain_n(const LamportTable& t, int rank, uint32_t* state, void* x, size_t bytes, bool bf16,
                    cudaStream_t stream) {
  const int64_t nvec = int64_t(bytes / 16);
  const int blocks = int(std::min<int64_t>(kPlainMaxBlocks, (nvec + kPlainThreads - 1) / kPlainThreads));
  if (bf16)
    launch_pdl("lamport_all_reduce", plain_kernel<__nv_bfloat16, N>, blocks, kPlainThreads, 0, stream, t, rank, state,
               static_cast<uint4*>(x), nvec);
  else
    launch_pdl("lamport_all_reduce", plain_kernel<float, N>, blocks, kPlainThreads, 0, stream, t, rank, state,
               static_cast<uint4*>(x), nvec);
}

template <typename T, int N>
void launch_fused_n(const LamportTable& t, int rank, uint32_t* state, const FusedNormArgs& a, cudaStream_t stream) {
  const int64_t units = a.cols / kVec<T>;
  const int threads = int((units + 31) / 32 * 32);
  auto kernel = a.next_out ? fused_kernel<T, N, true> : fused_kernel<T, N, false>;
  launch_pdl("lamport_all_reduce_residual_norm", kernel, unsigned(a.rows), threads, 0, stream, t, rank, state,
             static_cast<const T*>(a.o), static_cast<T*>(a.resid), a.w, a.w_f32, a.cols, a.eps, a.out_scale, a.next_w,
             a.next_w_f32, static_cast<T*>(a.next_out));
}

template <typename F>
void by_ranks(int ranks, F&& f) {
  switch (ranks) {
    case 2: f(std::integral_constant<int, 2>{}); break;
    case 3: f(std::integral_constant<int, 3>{}); break;
    case 4: f(std::integral_constant<int, 4>{}); break;
    case 5: f(std::integral_constant<int, 5>{}); break;
    case 6: f(std::integral_constant<int, 6>{}); break;
    case 7: f(std::integral_constant<int, 7>{}); break;
    default: f(std::integral_constant<int, 8>{}); break;
  }
}

}  // namespace

void launch_lamport_all_reduce(const LamportTable& t, int ranks, int rank, uint32_t* state, void* x, size_t bytes,
                               bool bf16, cudaStream_t stream) {
  by_ranks(ranks, [&](auto n) { launch_plain_n<decltype(n)::value>(t, rank, state, x, bytes, bf16, stream); });
  GS_CUDA_LAUNCHED("lamport_all_reduce");
}

void launch_lamport_all_reduce_residual_norm(const LamportTable& t, int ranks, int rank, uint32_t* state,
                                             const FusedNormArgs& a, cudaStream_t stream) {
  by_ranks(ranks, [&](auto n) {
    if (a.bf16) launch_fused_n<__nv_bfloat16, decltype(n)::value>(t, rank, state, a, stream);
    else launch_fused_n<float, decltype(n)::value>(t, rank, state, a, stream);
  });
  GS_CUDA_LAUNCHED("lamport_all_reduce_residual_norm");
}

}  // namespace gs::cuda
