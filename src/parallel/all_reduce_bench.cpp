#if GEMMASERVE_HAVE_CUDA  // communicators.cpp stands in without CUDA
#include "parallel/all_reduce_bench.h"
#include "parallel/module_loading.h"

#include <algorithm>

#include "core/error.h"
#include "core/log.h"
#include "kernels/backends.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/cuda_check.h"
#include "parallel/gpu_communicator.h"
#include "parallel/rank_workers.h"

namespace gs {

namespace {

struct Group {
  std::vector<std::unique_ptr<Backend>> backends;
  std::vector<std::unique_ptr<Communicator>> custom, nccl;
  std::unique_ptr<RankWorkers> workers;
};

// Median microseconds per all-reduce on rank 0.
double time_all_reduce(Group& g, const std::vector<Communicator*>& comms, size_t bytes,
                       const AllReduceBenchOptions& o) {
  const int n = int(g.backends.size());
  double result = 0;
  g.workers->run([&](int r) {
    Backend& be = *g.backends[size_t(r)];
    const Tensor x = be.empty(DType::BF16, Shape{int64_t(bytes / 2)});
    be.fill_uniform(x, 1, 1.f);  // repeated sums overflow to inf in time: the speed is the same
    for (int i = 0; i < 3; ++i) comms[size_t(r)]->all_reduce_sum(x);  // eager first (NCCL sets up)
    be.synchronize();
    be.begin_capture();
    for (int i = 0; i < o.reps; ++i) comms[size_t(r)]->all_reduce_sum(x);
    const int graph = be.end_capture();
    auto stream = static_cast<cudaStream_t>(be.native_stream());
    std::vector<cudaEvent_t> ev(size_t(o.iters) + 1);
    for (auto& e : ev) GS_CUDA_CHECK(cudaEventCreate(&e));
    for (int i = 0; i < o.warmup; ++i) be.replay(graph);
    // Replays back to back: the ranks' launch skew delays only the first sample.
    GS_CUDA_CHECK(cudaEventRecord(ev[0], stream));
    for (int i = 0; i < o.iters; ++i) {
      be.replay(graph);
      GS_CUDA_CHECK(cudaEventRecord(ev[size_t(i) + 1], stream));
    }
    be.synchronize();
    std::vector<double> us;
    for (int i = 0; i < o.iters; ++i) {
      float ms = 0;
      GS_CUDA_CHECK(cudaEventElapsedTime(&ms, ev[size_t(i)], ev[size_t(i) + 1]));
      us.push_back(1000.0 * ms / o.reps);
    }
    for (auto& e : ev) cudaEventDestroy(e);
    be.release_graph(graph);
    std::sort(us.begin(), us.end());
    if (r == 0) result = us[us.size() / 2];
  });
  (void)n;
  return result;
}

}  // namespace

std::vector<AllReduceBenchRow> run_all_reduce_bench(const AllReduceBenchOptions& o) {
  prefer_eager_module_loading();  // why: parallel/module_loading.h
  const int devices = cuda_device_count();
  GS_CHECK(devices >= 2, "bench-allreduce needs at least 2 GPUs ({} visible)", devices);
  GS_CHECK(o.sizes.size() == o.labels.size(), "bench-allreduce: {} sizes, {} labels", o.sizes.size(), o.labels.size());
  std::vector<AllReduceBenchRow> rows;
  for (int n : o.ranks) {
    if (n > devices) {
      log::warn("bench-allreduce: skipping {} ranks ({} GPUs visible)", n, devices);
      continue;
    }
    Group g;
    g.backends.resize(size_t(n));
    g.workers = std::make_unique<RankWorkers>(n, [&g] {
      for (auto* set : {&g.custom, &g.nccl})
        for (auto& c : *set) c->abort();
    });
    g.workers->run([&](int r) {
      g.backends[size_t(r)] = create_backend("cuda:" + std::to_string(r));
      g.backends[size_t(r)]->make_current();
    });
    std::vector<Backend*> bes;
    for (auto& b : g.backends) bes.push_back(b.get());
    size_t largest = 0;
    for (size_t s : o.sizes) largest = std::max(largest, s);
    GpuCollectiveOptions ours;
    ours.custom_threshold_bytes = ours.custom_max_bytes;  // every message it can take
    GpuCollectiveOptions nccl_only;
    nccl_only.custom_all_reduce = false;
    g.custom = make_gpu_communicators(bes, ours);
    g.nccl = make_gpu_communicators(bes, nccl_only);
    std::vector<Communicator*> custom, nccl;
    for (auto& c : g.custom) custom.push_back(c.get());
    for (auto& c : g.nccl) nccl.push_back(c.get());
    for (size_t i = 0; i < o.sizes.size(); ++i) {
      AllReduceBenchRow row;
      row.ranks = n;
      row.bytes = o.sizes[i];
      row.label = o.labels[i];
      row.nccl_us = time_all_reduce(g, nccl, row.bytes, o);
      if (row.bytes <= ours.custom_max_bytes && g.custom[0]->name() == "nccl+custom")
        row.custom_us = time_all_reduce(g, custom, row.bytes, o);
      rows.push_back(row);
    }
    g.workers->run([&](int r) {
      g.custom[size_t(r)].reset();
      g.nccl[size_t(r)].reset();
      g.backends[size_t(r)].reset();
    });
  }
  return rows;
}

}  // namespace gs
#endif  // GEMMASERVE_HAVE_CUDA
