// The custom all-reduce for small messages (decode steps: a few KB to a few hundred KB per
// rank), over NVLink or PCIe peer memory between the GPUs of this process. Two kernels:
//
// Push (lamport_all_reduce.cu; messages up to push_max_bytes, the default): each rank writes its
// vectors straight into every peer's receive buffer, whose locations hold a sentinel until a value
// lands, and polls its own buffer: no flag exchange and no remote reads. It also comes fused with
// the residual add and the RMSNorms after a row-parallel projection (all_reduce_residual_norm).
//
// One-shot (custom_all_reduce.cu; larger messages up to max_bytes): each rank copies its input into its own peer-readable buffer, tells every peer "my chunk of
// epoch e is in place" by writing e into a flag in the peer's memory, waits for the peers' flags,
// then reads every rank's buffer and sums them in rank order: one pass over the data, one
// flag exchange (NCCL's ring needs 2·(N-1) steps), and identical bits on every rank. Epochs are
// counters on the device that the kernel advances itself, so the launch is a fixed set of
// arguments that a CUDA graph can replay. Two buffers alternate by epoch parity: a rank can only
// reach epoch e+2, and overwrite the buffer of epoch e, after every peer has signalled e+1, which
// each does only after finishing its reads of epoch e. A wait longer than 20 s traps (a peer
// died), so a failed rank gives an error instead of a hang.
#pragma once
#include <cuda_runtime.h>

#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace gs::cuda {

struct CustomAllReduceShared;

class CustomAllReduce {
 public:
  // One instance per rank for the GPUs `devices` (rank r on devices[r]), each with buffers of
  // max_bytes. Returns an empty vector, with the reason in *why, when the GPUs cannot all read each
  // other's memory (no peer access) or the count is outside 2..8.
  // push_max_bytes: the largest message the push kernel takes (0: one-shot only); its buffers
  // cost 2 · ranks · push_max_bytes per GPU.
  static std::vector<std::unique_ptr<CustomAllReduce>> create(const std::vector<int>& devices, size_t max_bytes,
                                                              size_t push_max_bytes, std::string* why);
  ~CustomAllReduce();

  size_t max_bytes() const;
  // Whether x can go through it: bf16 or f32, at most max_bytes, a multiple of 16 bytes, aligned.
  bool fits(const Tensor& x) const;
  // x = Σ_ranks x, in place, enqueued on `stream` of this rank's device. Every rank must call it
  // with the same size; capturable.
  void all_reduce_sum(const Tensor& x, cudaStream_t stream);

  // Whether all_reduce_residual_norm takes these: the push kernel on, o [rows, cols] within its
  // buffer, rows of at most 1024 16-byte vectors, resid/next_out of o's shape and dtype, 16-byte
  // aligned, weights of cols elements (bf16 or f32).
  bool fits_fused(const Tensor& o, const Tensor& resid, const Tensor& w, const Tensor* next_w,
                  const Tensor* next_out) const;
  // o = Σ_ranks o (not stored), then resid = (resid + rmsnorm(o)·w)·out_scale and, with next_w,
  // next_out = rmsnorm(resid)·next_w: one kernel for Backend::residual_add_norm(_then_norm) after
  // an all-reduce, with the same bits. Every rank must call it with the same shapes; capturable.
  void all_reduce_residual_norm(const Tensor& o, const Tensor& resid, const Tensor& w, float eps, float out_scale,
                                const Tensor* next_w, const Tensor* next_out, cudaStream_t stream);

 private:
  CustomAllReduce(std::shared_ptr<CustomAllReduceShared> s, int rank) : s_(std::move(s)), rank_(rank) {}
  std::shared_ptr<CustomAllReduceShared> s_;
  int rank_;
};

}  // namespace gs::cuda
