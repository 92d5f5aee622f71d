// Host side of the custom all-reduce (custom_all_reduce.h): peer access, buffers, flags.
#if GEMMASERVE_HAVE_CUDA
#include "parallel/custom_all_reduce.h"

#include <algorithm>

#include "core/error.h"
#include "kernels/cuda/cuda_check.h"
#include "parallel/custom_all_reduce_kernel.h"

namespace gs::cuda {

struct CustomAllReduceShared {
  std::vector<int> devices;
  size_t max_bytes = 0;
  PeerTable peers{};
  std::vector<uint32_t*> epochs;  // per rank, on its device: [PeerTable::kBlocks]
  LamportTable push{};            // slot_bytes 0: the push kernel is off
  std::vector<uint32_t*> push_state;  // per rank, on its device: [epoch, blocks done]

  ~CustomAllReduceShared() {
    int cur = 0;
    cudaGetDevice(&cur);
    for (size_t r = 0; r < devices.size(); ++r) {
      cudaSetDevice(devices[r]);
      cudaFree(peers.buf[r]);
      cudaFree(peers.flags[r]);
      cudaFree(epochs[r]);
      if (push.slot_bytes) {
        cudaFree(push.recv[r]);
        cudaFree(push_state[r]);
      }
    }
    cudaSetDevice(cur);
  }
};

std::vector<std::unique_ptr<CustomAllReduce>> CustomAllReduce::create(const std::vector<int>& devices,
                                                                      size_t max_bytes, size_t push_max_bytes,
                                                                      std::string* why) {
  const int n = int(devices.size());
  if (n < 2 || n > PeerTable::kMaxRanks) {
    if (why) *why = fmt::format("{} GPUs (it takes 2 to {})", n, PeerTable::kMaxRanks);
    return {};
  }
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      if (i == j) continue;
      int ok = 0;
      GS_CUDA_CHECK(cudaDeviceCanAccessPeer(&ok, devices[size_t(i)], devices[size_t(j)]));
      if (!ok) {
        if (why) *why = fmt::format("cuda:{} cannot access the memory of cuda:{}", devices[size_t(i)], devices[size_t(j)]);
        return {};
      }
    }
  int cur = 0;
  GS_CUDA_CHECK(cudaGetDevice(&cur));
  auto s = std::make_shared<CustomAllReduceShared>();
  s->devices = devices;
  s->max_bytes = (max_bytes + 15) / 16 * 16;
  s->epochs.assign(size_t(n), nullptr);
  s->push.slot_bytes = (std::min(push_max_bytes, s->max_bytes) + 15) / 16 * 16;
  s->push.ranks = n;
  s->push_state.assign(size_t(n), nullptr);
  for (int i = 0; i < n; ++i) {
    GS_CUDA_CHECK(cudaSetDevice(devices[size_t(i)]));
    for (int j = 0; j < n; ++j) {
      if (i == j) continue;
      cudaError_t err = cudaDeviceEnablePeerAccess(devices[size_t(j)], 0);
      if (err == cudaErrorPeerAccessAlreadyEnabled) cudaGetLastError();
      else GS_CUDA_CHECK(err);
    }
    GS_CUDA_CHECK(cudaMalloc(&s->peers.buf[i], 2 * s->max_bytes));
    GS_CUDA_CHECK(cudaMalloc(&s->peers.flags[i], sizeof(uint32_t) * PeerTable::kBlocks * PeerTable::kMaxRanks));
    GS_CUDA_CHECK(cudaMemset(s->peers.flags[i], 0, sizeof(uint32_t) * PeerTable::kBlocks * PeerTable::kMaxRanks));
    GS_CUDA_CHECK(cudaMalloc(&s->epochs[size_t(i)], sizeof(uint32_t) * PeerTable::kBlocks));
    GS_CUDA_CHECK(cudaMemset(s->epochs[size_t(i)], 0, sizeof(uint32_t) * PeerTable::kBlocks));
    if (s->push.slot_bytes) {
      const size_t bytes = 2 * size_t(n) * s->push.slot_bytes;
      GS_CUDA_CHECK(cudaMalloc(&s->push.recv[i], bytes));
      GS_CUDA_CHECK(cudaMemset(s->push.recv[i], 0xff, bytes));  // every location: the sentinel
      GS_CUDA_CHECK(cudaMalloc(&s->push_state[size_t(i)], 2 * sizeof(uint32_t)));
      GS_CUDA_CHECK(cudaMemset(s->push_state[size_t(i)], 0, 2 * sizeof(uint32_t)));
    }
  }
  for (int i = 0; i < n; ++i) {
    GS_CUDA_CHECK(cudaSetDevice(devices[size_t(i)]));
    GS_CUDA_CHECK(cudaDeviceSynchronize());
  }
  GS_CUDA_CHECK(cudaSetDevice(cur));
  std::vector<std::unique_ptr<CustomAllReduce>> out;
  for (int r = 0; r < n; ++r) out.push_back(std::unique_ptr<CustomAllReduce>(new CustomAllReduce(s, r)));
  return out;
}

CustomAllReduce::~CustomAllReduce() = default;

size_t CustomAllReduce::max_bytes() const { return s_->max_bytes; }

bool CustomAllReduce::fits(const Tensor& x) const {
  return x.device == Device::CUDA && (x.dtype == DType::BF16 || x.dtype == DType::F32) && x.nbytes() > 0 &&
         x.nbytes() <= s_->max_bytes && x.nbytes() % 16 == 0 && reinterpret_cast<uintptr_t>(x.data) % 16 == 0;
}

void CustomAllReduce::all_reduce_sum(const Tensor& x, cudaStream_t stream) {
  GS_CHECK(fits(x), "custom all-reduce: {} does not fit (bf16/f32, 16-byte multiple, at most {} bytes)", x.str(),
           s_->max_bytes);
  const int n = int(s_->devices.size());
  if (x.nbytes() <= s_->push.slot_bytes)
    launch_lamport_all_reduce(s_->push, n, rank_, s_->push_state[size_t(rank_)], x.data, x.nbytes(),
                              x.dtype == DType::BF16, stream);
  else
    launch_one_shot_all_reduce(s_->peers, n, rank_, s_->epochs[size_t(rank_)], x.data, x.nbytes(),
                               x.dtype == DType::BF16, s_->max_bytes, stream);
}

bool CustomAllReduce::fits_fused(const Tensor& o, const Tensor& resid, const Tensor& w, const Tensor* next_w,
                                 const Tensor* next_out) const {
  auto aligned = [](const Tensor& t) { return reinterpret_cast<uintptr_t>(t.data) % 16 == 0; };
  auto weight_ok = [&](const Tensor& t) {
    return t.device == Device::CUDA && t.numel() == o.cols() && (t.dtype == DType::BF16 || t.dtype == DType::F32);
  };
  auto like_o = [&](const Tensor& t) {
    return t.device == Device::CUDA && t.dtype == o.dtype && t.rows() == o.rows() && t.cols() == o.cols() &&
           aligned(t);
  };
  if (!s_->push.slot_bytes || o.device != Device::CUDA || (o.dtype != DType::BF16 && o.dtype != DType::F32)) return false;
  const int64_t vec = 16 / int64_t(dtype_size(o.dtype));
  if (o.rows() < 1 || o.cols() % vec != 0 || o.cols() / vec > 1024 || o.nbytes() > s_->push.slot_bytes || !aligned(o))
    return false;
  if (!like_o(resid) || !weight_ok(w) || (next_w == nullptr) != (next_out == nullptr)) return false;
  return !next_out || (weight_ok(*next_w) && like_o(*next_out) && next_out->data != resid.data &&
                       next_out->data != o.data);
}

void CustomAllReduce::all_reduce_residual_norm(const Tensor& o, const Tensor& resid, const Tensor& w, float eps,
                                               float out_scale, const Tensor* next_w, const Tensor* next_out,
                                               cudaStream_t stream) {
  GS_CHECK(fits_fused(o, resid, w, next_w, next_out),
           "custom all-reduce: the fused residual norm does not take o {} resid {} (see fits_fused)", o.str(),
           resid.str());
  FusedNormArgs a;
  a.o = o.data, a.resid = resid.data, a.w = w.data, a.w_f32 = w.dtype == DType::F32;
  a.rows = o.rows(), a.cols = o.cols(), a.eps = eps, a.out_scale = out_scale;
  if (next_out) a.next_w = next_w->data, a.next_w_f32 = next_w->dtype == DType::F32, a.next_out = next_out->data;
  a.bf16 = o.dtype == DType::BF16;
  launch_lamport_all_reduce_residual_norm(s_->push, int(s_->devices.size()), rank_, s_->push_state[size_t(rank_)], a,
                                          stream);
}

}  // namespace gs::cuda
#endif  // GEMMASERVE_HAVE_CUDA
