// What the multi-GPU tests share: a group of cuda ranks (one thread each) with two sets of
// communicators, ours (custom all-reduce for every size it takes) and NCCL only; random inputs.
#pragma once
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "kernels/backends.h"
#include "kernels/cuda/cuda_backend.h"
#include "parallel/gpu_communicator.h"
#include "parallel/rank_workers.h"

namespace gs {

inline int gpus() { return cuda_device_count(); }

struct Ranks {
  explicit Ranks(int n) {
    backends.resize(size_t(n));
    workers = std::make_unique<RankWorkers>(n, [this] {
      for (auto* set : {&custom, &nccl})
        for (auto& c : *set) c->abort();
    });
    workers->run([&](int r) {
      backends[size_t(r)] = create_backend("cuda:" + std::to_string(r));
      backends[size_t(r)]->make_current();
    });
    std::vector<Backend*> bes;
    for (auto& b : backends) bes.push_back(b.get());
    GpuCollectiveOptions ours;
    ours.custom_threshold_bytes = ours.custom_max_bytes;
    ours.custom_push_max_bytes = size_t(1) << 20;  // the push kernel up to 1 MiB whatever the rank count
    custom = make_gpu_communicators(bes, ours);
    GpuCollectiveOptions off;
    off.custom_all_reduce = false;
    nccl = make_gpu_communicators(bes, off);
  }
  ~Ranks() {
    workers->run([&](int r) {
      custom[size_t(r)].reset();
      nccl[size_t(r)].reset();
      backends[size_t(r)].reset();
    });
  }
  int size() const { return int(backends.size()); }
  std::vector<std::unique_ptr<Backend>> backends;
  std::vector<std::unique_ptr<Communicator>> custom, nccl;
  std::unique_ptr<RankWorkers> workers;
};

// Host bytes of rank r's input: values in [-1, 1] of the dtype.
inline std::vector<uint8_t> input(DType dt, int64_t n, int rank, uint64_t salt) {
  std::mt19937_64 rng(1000003ull * uint64_t(rank) + salt);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<uint8_t> bytes(size_t(n) * dtype_size(dt));
  for (int64_t i = 0; i < n; ++i) {
    const float v = u(rng);
    if (dt == DType::F32) {
      std::memcpy(bytes.data() + 4 * i, &v, 4);
    } else {
      uint32_t b;
      std::memcpy(&b, &v, 4);
      const uint16_t h = uint16_t((b + 0x7fff + ((b >> 16) & 1)) >> 16);
      std::memcpy(bytes.data() + 2 * i, &h, 2);
    }
  }
  return bytes;
}

inline float as_float(DType dt, const std::vector<uint8_t>& b, int64_t i) {
  if (dt == DType::F32) {
    float v;
    std::memcpy(&v, b.data() + 4 * i, 4);
    return v;
  }
  uint16_t h;
  std::memcpy(&h, b.data() + 2 * i, 2);
  const uint32_t u = uint32_t(h) << 16;
  float v;
  std::memcpy(&v, &u, 4);
  return v;
}

}  // namespace gs
