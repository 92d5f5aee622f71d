// Host-side helpers for launchers: dtype dispatch and argument checks with messages that name
// the op and the offending tensor. (No fmt here: this header is included by .cu files.)
#pragma once
#include <cuda_bf16.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>
#include <utility>

#include "core/tensor.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/kernel_policy.h"

namespace gs::cuda {

template <typename... Parts>
std::string str_cat(const Parts&... parts) {
  std::ostringstream os;
  (os << ... << parts);
  return os.str();
}

// Throws gs::Error with the concatenated message unless `cond`.
template <typename... Parts>
void require(bool cond, const Parts&... parts) {
  if (!cond) fail(str_cat(parts...));
}

template <typename T>
struct TypeTag {
  using type = T;
};

// Calls f(TypeTag<T>{}) with T = float for F32 and __nv_bfloat16 for BF16.
template <typename F>
void dispatch_float(DType dt, const char* op, const char* what, F&& f) {
  if (dt == DType::BF16) f(TypeTag<__nv_bfloat16>{});
  else if (dt == DType::F32) f(TypeTag<float>{});
  else fail(str_cat(op, ": ", what, " has dtype ", dtype_name(dt), "; expected bf16 or f32"));
}

inline void check_cuda_tensor(const Tensor& t, const char* op, const char* what) {
  require(t.defined(), op, ": ", what, " is undefined");
  require(t.device == Device::CUDA, op, ": ", what, " (", t.str(), ") must live on the GPU");
}

inline void check_dtype(const Tensor& t, DType dt, const char* op, const char* what) {
  require(t.dtype == dt, op, ": ", what, " is ", t.str(), "; expected ", dtype_name(dt));
}

// Sets a kernel's dynamic shared memory limit to at least `bytes` in the current device's
// context, once per (kernel, device) and size: the attribute belongs to one device's context, so
// tensor-parallel ranks each need their own call (a process-wide "done" flag left every rank but
// the first launching with too little, cudaErrorInvalidValue). Thread-safe; no lock.
void allow_smem_on_current_device(const void* kernel, size_t bytes);

// Opts a kernel into more than the default 48 KB of dynamic shared memory when it needs it.
template <typename K>
void allow_smem(K kernel, size_t bytes) {
  if (bytes > 48 * 1024) allow_smem_on_current_device(reinterpret_cast<const void*>(kernel), bytes);
}

// A device attribute of the current device, read once per device (launch paths ask per step).
inline int device_attribute(cudaDeviceAttr attr, std::atomic<int> (&cache)[64]) {
  int dev = 0;
  GS_CUDA_CHECK(cudaGetDevice(&dev));
  int n = cache[dev & 63].load(std::memory_order_relaxed);
  if (n == 0) {
    GS_CUDA_CHECK(cudaDeviceGetAttribute(&n, attr, dev));
    cache[dev & 63].store(n, std::memory_order_relaxed);
  }
  return n;
}
// Multiprocessors of the current device (launch planning calls it per op).
inline int sm_count() {
  static std::atomic<int> counts[64] = {};
  return device_attribute(cudaDevAttrMultiProcessorCount, counts);
}
inline int compute_capability_major() {
  static std::atomic<int> majors[64] = {};
  return device_attribute(cudaDevAttrComputeCapabilityMajor, majors);
}

// Blocks for a grid-stride loop over n work items with `threads` per block: enough to fill the
// GPU several times over, never more than the work needs.
inline int grid_for(int64_t n, int threads) {
  int64_t blocks = (n + threads - 1) / threads;
  return int(std::clamp<int64_t>(blocks, 1, 132 * 16));
}

// ---- programmatic dependent launch (PDL) -----------------------------------------------------
// A decode step is hundreds of small kernels; between two of them the GPU drains the first grid
// before it starts the second. With PDL the next kernel is launched while the previous one still
// runs: its blocks start, do what does not depend on the previous kernel (prefetch weights), and
// block in pdl_wait() until the previous grid has completed and its writes are visible.
//
// The contract for every kernel launched through launch_pdl():
//   - pdl_wait() before the first read of anything an earlier kernel wrote and before the first
//     global write. Only reads of immutable weights may come before it, and, in a kernel that is
//     never a step's first, reads of the step's inputs (positions, lengths, page tables, input
//     ids: copied or scattered in before the step's first kernel). Every such kernel must
//     call it, even one that depends on nothing: the kernel after it only waits for *it*, so a
//     kernel that skipped the wait would let its successor overtake the kernel before.
//   - pdl_launch_dependents() once the kernel is past its wait: from then the next kernel may be
//     scheduled into free SM slots. Calling it after the wait (not before) keeps at most two
//     kernels of the stream resident and one waiting, never a chain of waiting grids.
// Kernels with nothing to do before the wait begin with pdl_enter() (both, in that order); only
// kernels that load weights first (the GEMVs) call the two themselves.
// The wait is for the previous grid's completion whatever that grid did, so a kernel following
// a cuBLASLt GEMM (which does not take part) is still correct. Both are no-ops on sm_80 and when
// the kernel was launched without the attribute.
#ifdef __CUDACC__
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ __forceinline__ void pdl_launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
// The prologue of a kernel with nothing to do before its wait: wait, then let the next one in.
__device__ __forceinline__ void pdl_enter() {
  pdl_wait();
  pdl_launch_dependents();
}
#endif

// Rows of the step being enqueued, from Backend::set_step_rows() (0: unknown). One thread drives a
// backend's stream, so the hint is per thread.
inline thread_local int pdl_step_rows = 0;

// Whether launch_pdl() sets the PDL attribute: on sm_90 devices, for the steps the policy names
// (by default those of 1-8 rows; decision record "PDL rows", docs/kernel-policy.md).
inline bool pdl_enabled() {
  static const bool sm90 = [] {
    int dev = 0, major = 0;
    if (cudaGetDevice(&dev) != cudaSuccess) return false;
    return cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess && major >= 9;
  }();
  if (!sm90) return false;
  const PdlPolicy& p = kernel_policy().pdl;
  switch (p.mode) {
    case PdlMode::Always: return true;
    case PdlMode::Never: return false;
    case PdlMode::ByStepRows: break;
  }
  return pdl_step_rows >= 1 && pdl_step_rows <= p.max_step_rows;
}

// kernel<<<grid, block, smem, stream>>>(args...) with the programmatic-stream-serialization
// attribute when pdl_enabled(). Stream capture records it as a programmatic graph edge, so the
// decode graphs keep the overlap. Launch errors throw, naming the kernel.
// With `cluster` other than 1 x 1 x 1: in thread-block clusters of that shape (sm_90).
template <typename... KArgs, typename... Args>
void launch_pdl(const char* name, void (*kernel)(KArgs...), dim3 grid, dim3 block, size_t smem,
                cudaStream_t stream, dim3 cluster, Args&&... args) {
  cudaLaunchAttribute attr[2];
  int n = 0;
  if (pdl_enabled()) {
    attr[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[n++].val.programmaticStreamSerializationAllowed = 1;
  }
  if (cluster.x * cluster.y * cluster.z > 1) {
    attr[n].id = cudaLaunchAttributeClusterDimension;
    attr[n].val.clusterDim.x = cluster.x, attr[n].val.clusterDim.y = cluster.y, attr[n].val.clusterDim.z = cluster.z;
    ++n;
  }
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cfg.attrs = attr;
  cfg.numAttrs = n;
  cudaError_t err = cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...);
  if (err != cudaSuccess) throw_cuda_error(err, name, __FILE__, __LINE__);
}
template <typename... KArgs, typename... Args>
void launch_pdl(const char* name, void (*kernel)(KArgs...), dim3 grid, dim3 block, size_t smem,
                cudaStream_t stream, Args&&... args) {
  launch_pdl(name, kernel, grid, block, smem, stream, dim3(1, 1, 1), std::forward<Args>(args)...);
}

}  // namespace gs::cuda
