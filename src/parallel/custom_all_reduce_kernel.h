// The launch of the one-shot all-reduce kernel (custom_all_reduce.cu), called by its host side.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace gs::cuda {

// The addresses every rank's kernel sees: each rank's data buffers and flag arrays.
struct PeerTable {
  static constexpr int kMaxRanks = 8;
  static constexpr int kBlocks = 32;  // the grid of every launch (see custom_all_reduce.cu)
  char* buf[kMaxRanks];               // 2 · max_bytes each (halves alternate by epoch parity)
  uint32_t* flags[kMaxRanks];         // [kBlocks][kMaxRanks]: flags[r][b][p] = last epoch peer p's block b signalled
};

// x (bytes, a multiple of 16) = Σ over `ranks` ranks, on `stream` of rank `rank`'s device.
void launch_one_shot_all_reduce(const PeerTable& peers, int ranks, int rank, uint32_t* epochs, void* x, size_t bytes,
                                bool bf16, size_t half_bytes, cudaStream_t stream);

}  // namespace gs::cuda
