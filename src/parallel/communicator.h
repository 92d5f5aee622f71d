// The collectives of tensor parallelism (docs/scale-out.md): one Communicator per rank, each bound
// to that rank's Backend. Every rank calls the same collectives in the same order with tensors of
// the same shape; a call enqueues on the rank's backend like any op (asynchronous on cuda, and
// capturable in a CUDA graph), so the model code calls them between its ops.
#pragma once
#include <cstddef>
#include <string>

#include "core/tensor.h"

namespace gs {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string name() const = 0;  // "local", "nccl", "nccl+custom"

  // x = Σ over ranks of x, in place. Every rank ends with identical bits.
  virtual void all_reduce_sum(const Tensor& x) = 0;
  // The all-reduce of o fused with what follows it in every block (model/gemma4_blocks.cpp):
  // resid = (resid + rmsnorm(Σ o)·w)·out_scale, then next_out = rmsnorm(resid)·next_w when next_out
  // is given, as Backend::residual_add_norm(_then_norm) computes them; o itself is left as it was.
  // Returns false, having done nothing, where this communicator has no fused path for these
  // tensors: the caller then calls all_reduce_sum and the backend op.
  virtual bool all_reduce_residual_norm(const Tensor& o, const Tensor& resid, const Tensor& w, float eps,
                                        float out_scale, const Tensor* next_w, const Tensor* next_out) {
    (void)o, (void)resid, (void)w, (void)eps, (void)out_scale, (void)next_w, (void)next_out;
    return false;
  }
  // out [R, N] = every rank's shard [R, C] side by side, rank r's at columns [r·C, (r+1)·C), for
  // (size-1)·C < N <= size·C: columns past N (the padding of the last shards) are dropped.
  // (The vocab-parallel LM head: each rank computes the logits of its slice of the vocabulary.)
  virtual void all_gather_cols(const Tensor& shard, const Tensor& out) = 0;
  // all_gather_cols along rows: out [size·R, C], rank r's rows at [r·R, (r+1)·R).
  virtual void all_gather_rows(const Tensor& shard, const Tensor& out) = 0;
  // x on every rank = x on rank `root`, in place (any dtype; same shape everywhere). Rank 0's
  // sampled ids reach the other ranks this way, for steps launched ahead (ModelRunner).
  virtual void broadcast(const Tensor& x, int root) = 0;
  // Returns once every rank has reached it (on cuda: their streams have, and this host waits).
  virtual void barrier() = 0;
  // Sizes scratch for collectives of up to `bytes` per rank and output. Call outside graph capture
  // (as Gemma4Model::reserve does); a collective past the reserved size throws.
  virtual void reserve(size_t bytes) { (void)bytes; }
  // Wakes and fails every rank blocked in (or later entering) a collective of this group: called
  // when one rank fails so that the others stop instead of waiting for it forever. Thread-safe.
  virtual void abort() = 0;
};

}  // namespace gs
