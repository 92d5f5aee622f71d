// Host side of the custom all-reduce (custom_all_reduce.h): peer access, buffers, flags.
#if GEMMASERVE_HAVE_CUDA
#include "parallel/custom_all_reduce.h"

#include "core/error.h"
#include "kernels/cuda/cuda_check.h"
#include "parallel/custom_all_reduce_kernel.h"

namespace gs::cuda {

struct CustomAllReduceShared {
  std::vector<int> devices;
  size_t max_bytes = 0;
  PeerTable peers{};
  std::vector<uint32_t*> epochs;  // per rank, on its device: [PeerTable::kBlocks]

  ~CustomAllReduceShared() {
    int cur = 0;
    cudaGetDevice(&cur);
    for (size_t r = 0; r < devices.size(); ++r) {
      cudaSetDevice(devices[r]);
      cudaFree(peers.buf[r]);
      cudaFree(peers.flags[r]);
      cudaFree(epochs[r]);
    }
    cudaSetDevice(cur);
  }
};

std::vector<std::unique_ptr<CustomAllReduce>> CustomAllReduce::create(const std::vector<int>& devices,
                                                                      size_t max_bytes, std::string* why) {
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
  launch_one_shot_all_reduce(s_->peers, int(s_->devices.size()), rank_, s_->epochs[size_t(rank_)], x.data, x.nbytes(),
                             x.dtype == DType::BF16, s_->max_bytes, stream);
}

}  // namespace gs::cuda
#endif  // GEMMASERVE_HAVE_CUDA
