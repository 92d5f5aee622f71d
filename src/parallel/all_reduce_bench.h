// `gemmaserve bench-allreduce`: the all-reduce of tensor parallelism timed on the GPUs of this
// host, NCCL against the custom all-reduce (its push kernel; the one-shot kernel above the push
// limit), for one decode step's message (batch × hidden bf16) and a sweep of sizes. Each rank
// captures `reps` back-to-back all-reduces in a CUDA graph (as decode runs them); a sample is one
// replay timed with CUDA events on that rank's stream, divided by reps; the figure is rank 0's
// median sample after warm-up.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace gs {

struct AllReduceBenchOptions {
  std::vector<int> ranks{2, 4};    // group sizes (those above the GPU count are skipped)
  std::vector<size_t> sizes;       // message bytes per rank
  std::vector<std::string> labels; // one per size ("" for sweep points)
  int warmup = 5, iters = 30, reps = 20;
};

struct AllReduceBenchRow {
  int ranks = 0;
  size_t bytes = 0;
  std::string label;
  double nccl_us = 0;
  double custom_us = -1;  // -1: the size is past the custom all-reduce's buffer
};

// Throws gs::Error without CUDA or with fewer than 2 GPUs.
std::vector<AllReduceBenchRow> run_all_reduce_bench(const AllReduceBenchOptions& opt);

}  // namespace gs
