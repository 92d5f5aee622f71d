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

// The push all-reduce's receive buffers (lamport_all_reduce.cu): recv[r] is rank r's, [2 epoch
// slots][ranks senders][slot_bytes], every byte 0xff (the sentinel) where no value is pending.
struct LamportTable {
  char* recv[PeerTable::kMaxRanks];
  size_t slot_bytes = 0;  // the largest message it takes
  int ranks = 0;
};

// The fused all-reduce + residual add + RMSNorm(s) of one rank: o [rows, cols] (this rank's partial
// sums) is all-reduced, then resid = (resid + rmsnorm(o)·w)·out_scale and, when next_out is set,
// next_out = rmsnorm(resid)·next_w, as norms.cu's residual_add_norm(_then_norm) computes them.
struct FusedNormArgs {
  const void* o = nullptr;
  void* resid = nullptr;
  const void* w = nullptr;
  bool w_f32 = false;
  int64_t rows = 0, cols = 0;
  float eps = 0, out_scale = 1;
  const void* next_w = nullptr;
  bool next_w_f32 = false;
  void* next_out = nullptr;
  bool bf16 = true;  // else f32 activations
};

// x (bytes, a multiple of 16) = Σ over `ranks` ranks, on `stream` of rank `rank`'s device.
void launch_one_shot_all_reduce(const PeerTable& peers, int ranks, int rank, uint32_t* epochs, void* x, size_t bytes,
                                bool bf16, size_t half_bytes, cudaStream_t stream);

// The push all-reduce of x (bytes <= t.slot_bytes, a multiple of 16), and the fused one.
// state: this rank's [epoch, blocks done] on its device.
void launch_lamport_all_reduce(const LamportTable& t, int ranks, int rank, uint32_t* state, void* x, size_t bytes,
                               bool bf16, cudaStream_t stream);
void launch_lamport_all_reduce_residual_norm(const LamportTable& t, int ranks, int rank, uint32_t* state,
                                             const FusedNormArgs& a, cudaStream_t stream);

}  // namespace gs::cuda
