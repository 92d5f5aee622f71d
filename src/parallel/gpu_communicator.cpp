#if GEMMASERVE_HAVE_CUDA  // communicators.cpp stands in without CUDA
#include "parallel/gpu_communicator.h"

#include <nccl.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>

#include "core/error.h"
#include "core/log.h"
#include "core/thread_activity.h"
#include "kernels/cuda/cuda_check.h"
#include "parallel/custom_all_reduce.h"
#include "parallel/launch_gate.h"

namespace gs {
namespace {

ncclDataType_t nccl_type(DType t, int rank) {
  switch (t) {
    case DType::BF16: return ncclBfloat16;
    case DType::F16: return ncclFloat16;
    case DType::F32: return ncclFloat32;
    case DType::I32: return ncclInt32;
    default: throw Error("rank {}: no NCCL type for {}", rank, dtype_name(t));
  }
}

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(ncclComm_t comm, int rank, int size, Backend& be, std::unique_ptr<cuda::CustomAllReduce> custom,
                   size_t threshold, bool fuse_norm, std::shared_ptr<LaunchGate> gate)
      : comm_(comm), rank_(rank), size_(size), be_(be), stream_(static_cast<cudaStream_t>(be.native_stream())),
        custom_(std::move(custom)), threshold_(threshold), fuse_norm_(fuse_norm), gate_(std::move(gate)) {
    token_ = be_.empty(DType::F32, Shape{4});
  }
  ~NcclCommunicator() override {
    if (!aborted_.load()) ncclCommDestroy(comm_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string name() const override { return custom_ ? "nccl+custom" : "nccl"; }

  void all_reduce_sum(const Tensor& x) override {
    const bool gated = enter_step("at the launch gate before an all-reduce");
    if (custom_ && x.nbytes() <= threshold_ && custom_->fits(x)) {
      mark_activity("enqueueing the custom all-reduce");
      custom_->all_reduce_sum(x, stream_);
    } else {
      mark_activity("enqueueing ncclAllReduce");
      check("ncclAllReduce", ncclAllReduce(x.data, x.data, size_t(x.numel()), nccl_type(x.dtype, rank_), ncclSum,
                                           comm_, stream_));
    }
    leave_step(gated, "at the launch gate after an all-reduce");
  }

  bool all_reduce_residual_norm(const Tensor& o, const Tensor& resid, const Tensor& w, float eps, float out_scale,
                                const Tensor* next_w, const Tensor* next_out) override {
    if (!custom_ || !fuse_norm_ || o.nbytes() > threshold_ || !custom_->fits_fused(o, resid, w, next_w, next_out))
      return false;
    const bool gated = enter_step("at the launch gate before an all-reduce + norm");
    mark_activity("enqueueing the custom all-reduce + residual norm");
    custom_->all_reduce_residual_norm(o, resid, w, eps, out_scale, next_w, next_out, stream_);
    leave_step(gated, "at the launch gate after an all-reduce + norm");
    return true;
  }

  void all_gather_rows(const Tensor& shard, const Tensor& out) override {
    GS_CHECK(out.numel() == shard.numel() * size_ && out.dtype == shard.dtype,
             "rank {}: all_gather_rows: out {} must hold {} shards {}", rank_, out.str(), size_, shard.str());
    const bool gated = enter_step("at the launch gate before an all-gather");
    mark_activity("enqueueing ncclAllGather");
    check("ncclAllGather",
          ncclAllGather(shard.data, out.data, size_t(shard.numel()), nccl_type(shard.dtype, rank_), comm_, stream_));
    leave_step(gated, "at the launch gate after an all-gather");
  }

  void all_gather_cols(const Tensor& shard, const Tensor& out) override {
    const int64_t R = shard.rows(), C = shard.cols(), N = out.cols();
    GS_CHECK(out.rows() == R && N > C * (size_ - 1) && N <= C * size_ && out.dtype == shard.dtype,
             "rank {}: all_gather_cols: out {} must be [{}, ({}, {}]]", rank_, out.str(), R, C * (size_ - 1),
             C * size_);
    // NCCL gathers whole buffers end to end ([size, R, C]); strided copies put each rank's
    // block of columns in place.
    GS_CHECK(scratch_.defined() && scratch_.nbytes() >= shard.nbytes() * size_t(size_),
             "rank {}: all_gather_cols of {} bytes, {} reserved (Communicator::reserve)", rank_,
             shard.nbytes() * size_t(size_),
             scratch_.defined() ? scratch_.nbytes() : 0);
    const bool gated = enter_step("at the launch gate before an all-gather");
    mark_activity("enqueueing ncclAllGather");
    check("ncclAllGather",
          ncclAllGather(shard.data, scratch_.data, size_t(shard.numel()), nccl_type(shard.dtype, rank_), comm_, stream_));
    const size_t es = dtype_size(shard.dtype), row = size_t(C) * es;
    for (int r = 0; r < size_; ++r) {
      const size_t width = size_t(std::min(C, N - int64_t(r) * C)) * es;  // the last shards' padding dropped
      GS_CUDA_CHECK(cudaMemcpy2DAsync(out.ptr<char>() + size_t(r) * row, size_t(N) * es,
                                      scratch_.ptr<char>() + size_t(r) * shard.nbytes(), row, width, size_t(R),
                                      cudaMemcpyDeviceToDevice, stream_));
    }
    leave_step(gated, "at the launch gate after an all-gather");
  }

  void broadcast(const Tensor& x, int root) override {
    const bool gated = enter_step("at the launch gate before a broadcast");
    mark_activity("enqueueing ncclBroadcast");
    check("ncclBroadcast", ncclBroadcast(x.data, x.data, x.nbytes(), ncclUint8, root, comm_, stream_));
    leave_step(gated, "at the launch gate after a broadcast");
  }

  void barrier() override {
    check("ncclAllReduce (barrier)", ncclAllReduce(token_.data, token_.data, 1, ncclFloat32, ncclSum, comm_, stream_));
    be_.synchronize();
  }

  void reserve(size_t bytes) override {
    if (scratch_.defined() && scratch_.nbytes() >= bytes) return;
    scratch_ = be_.empty(DType::U8, Shape{int64_t(bytes)});
  }

  void abort() override {
    bool expected = false;
    if (aborted_.compare_exchange_strong(expected, true)) ncclCommAbort(comm_);
    if (gate_) gate_->abort();
  }

 private:
  // The ranks' threads meet before and after enqueueing a collective (why: launch_gate.h); not
  // while capturing a graph, which enqueues nothing. A rank that throws in between leaves the
  // others at the second gate until the failure aborts the group (RankWorkers).
  // Every collective passes here: it is counted and marked (core/thread_activity.h), so a stalled
  // step reports which rank is at which collective.
  bool enter_step(const char* where) {
    if (ThreadActivity* a = current_thread_activity()) a->collectives.fetch_add(1, std::memory_order_relaxed);
    if (!gate_ || capturing()) return false;
    mark_activity(where);
    gate_->arrive_and_wait();
    return true;
  }
  void leave_step(bool gated, const char* where) {
    if (gated) {
      mark_activity(where);
      gate_->arrive_and_wait();
    }
    mark_activity("enqueueing compute");
  }
  bool capturing() const {
    cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    GS_CUDA_CHECK(cudaStreamIsCapturing(stream_, &st));
    return st != cudaStreamCaptureStatusNone;
  }

  void check(const char* what, ncclResult_t r) {
    if (r == ncclSuccess || r == ncclInProgress) return;
    throw Error("rank {} (cuda:{}): {} failed: {} ({})", rank_, be_.device_index(), what, ncclGetErrorString(r),
                aborted_.load() ? "the group was aborted after another rank failed" : ncclGetLastError(comm_));
  }

  ncclComm_t comm_;
  int rank_, size_;
  Backend& be_;
  cudaStream_t stream_;
  std::unique_ptr<cuda::CustomAllReduce> custom_;
  size_t threshold_;
  bool fuse_norm_;
  Tensor scratch_, token_;
  std::atomic<bool> aborted_{false};
  std::shared_ptr<LaunchGate> gate_;
};

}  // namespace

std::vector<std::unique_ptr<Communicator>> make_gpu_communicators(const std::vector<Backend*>& ranks,
                                                                  const GpuCollectiveOptions& opt) {
  const int n = int(ranks.size());
  GS_CHECK(n >= 1, "gpu communicators: no ranks");
  std::vector<int> devices;
  for (int r = 0; r < n; ++r) {
    GS_CHECK(ranks[size_t(r)]->device() == Device::CUDA && ranks[size_t(r)]->native_stream(),
             "rank {}: backend {} is not a cuda backend", r, ranks[size_t(r)]->name());
    devices.push_back(ranks[size_t(r)]->device_index());
    for (int q = 0; q < r; ++q)
      GS_CHECK(devices[size_t(q)] != devices.back(), "ranks {} and {} are both on cuda:{}", q, r, devices.back());
  }
  std::vector<ncclComm_t> comms(static_cast<size_t>(n));
  // Connect every channel now rather than at each communicator's first collective (NCCL's default
  // since 2.22): that first collective would then set up peer buffers (allocations, IPC handles)
  // from inside a step, while the other rank's GPU may already spin in a collective.
  ::setenv("NCCL_RUNTIME_CONNECT", "0", /*overwrite=*/0);
  const ncclResult_t res = ncclCommInitAll(comms.data(), n, devices.data());
  if (res != ncclSuccess)
    throw Error("NCCL: creating communicators for {} GPUs failed: {} ({})", n, ncclGetErrorString(res),
                ncclGetLastError(nullptr));
  std::vector<std::unique_ptr<cuda::CustomAllReduce>> custom;
  // Developer switches for A/B runs (docs/perf/tensor-parallel.md): the one-shot kernel alone, and
  // the all-reduces unfused.
  auto env_off = [](const char* name) {
    const char* v = std::getenv(name);
    return v && std::string(v) == "0";
  };
  const size_t push_by_ranks = n <= 2 ? size_t(1) << 20 : size_t(256) << 10;
  const size_t push_bytes = env_off("GS_TP_ALLREDUCE_PUSH") ? 0
                            : opt.custom_push_max_bytes == GpuCollectiveOptions::kPushByRanks
                                ? push_by_ranks
                                : opt.custom_push_max_bytes;
  const bool fuse_norm = opt.fuse_norm && !env_off("GS_TP_FUSE_NORM");
  if (opt.custom_all_reduce && n > 1) {
    std::string why;
    custom = cuda::CustomAllReduce::create(devices, opt.custom_max_bytes, push_bytes, &why);
    if (custom.empty()) log::warn("custom all-reduce off ({}): every all-reduce goes through NCCL", why);
  }
  std::vector<std::unique_ptr<Communicator>> out;
  // GS_TP_LAUNCH_GATE=0: no gate (to measure what it costs or rule it out).
  auto gate = env_off("GS_TP_LAUNCH_GATE") ? nullptr : std::make_shared<LaunchGate>(n);
  for (int r = 0; r < n; ++r)
    out.push_back(std::make_unique<NcclCommunicator>(comms[size_t(r)], r, n, *ranks[size_t(r)],
                                                     custom.empty() ? nullptr : std::move(custom[size_t(r)]),
                                                     std::min(opt.custom_threshold_bytes, opt.custom_max_bytes), fuse_norm,
                                                     gate));
  int version = 0;
  ncclGetVersion(&version);
  const size_t custom_bytes = std::min(opt.custom_threshold_bytes, opt.custom_max_bytes);
  log::info("tensor parallel: NCCL {} over {} GPUs, custom all-reduce {}", version, n,
            custom.empty() ? "off"
                           : fmt::format("up to {} KB (push kernel up to {} KB{}, one-shot above)", custom_bytes >> 10,
                                         std::min(push_bytes, custom_bytes) >> 10,
                                         fuse_norm && push_bytes ? ", fused with the residual norms" : ""));
  return out;
}

}  // namespace gs
#endif  // GEMMASERVE_HAVE_CUDA
