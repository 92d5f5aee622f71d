// Where the two half contractions of a split-d S = Q·Kᵀ meet, in the hd512 Hopper kernels
// (attention_wgmma.cuh): RowSplitSoftmax, warp pairs across the two warpgroups of one CTA, which
// also share the softmax. Each half is 64 rows x BN keys of f32, held as the wgmma accumulator:
// the same (row, key) per register index and thread in both halves, so the exchange runs in
// register order, [register][lane], without bank conflicts.
#pragma once
#include <cstdint>

#include "kernels/cuda/attention_wgmma_step.cuh"
#include "kernels/cuda/attention_wgmma_sync.cuh"

namespace gs::cuda::attn {

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
// Warp w of warpgroup 0 and warp w of warpgroup 1 hold the same 16 rows and sit on the same SM
// sub-partition. Only one of them computes the rows' softmax (warps 0-1 of warpgroup 0, warps
// 2-3 of warpgroup 1), so a sub-partition runs one softmax instead of two identical ones. The
// pair meets on named barrier 4 + w and shares a 4 KB slot of X, [register][lane]: the other
// warp writes its half of S there; the computing warp adds it, runs the softmax (it alone keeps
// the rows' running max and sum) and writes P and the two rescale factors back in its place.
// Each thread reads and writes only its own positions, so two barriers a tile order everything,
// the next tile's writes included.
struct RowSplitSoftmax {
  float* slot;
  int lane, bar_id;
  bool computes;

  __device__ __forceinline__ void sync() const { asm volatile("bar.sync %0, 64;\n" ::"r"(bar_id) : "memory"); }

  template <int NA, bool OV = false>
  __device__ __forceinline__ void run(float (&sc)[NA], int k0, const TileRows& rows, float scale_log2,
                                      float (&m_run)[2], float (&l_run)[2], uint32_t (&p)[NA / 2],
                                      float (&alpha)[2]) const {
    if (!computes) {
#pragma unroll
      for (int i = 0; i < NA; ++i) slot[i * 32 + lane] = sc[i];
      sync();
      sync();
#pragma unroll
      for (int i = 0; i < NA / 2; ++i) p[i] = __float_as_uint(slot[i * 32 + lane]);
      alpha[0] = slot[(NA / 2) * 32 + lane], alpha[1] = slot[(NA / 2 + 1) * 32 + lane];
    } else {
      sync();
#pragma unroll
      for (int i = 0; i < NA; ++i) sc[i] += slot[i * 32 + lane];
      softmax_tile<2 * NA, OV>(sc, k0, rows, scale_log2, lane, m_run, l_run, alpha);
      pack_p_tile<NA>(sc, p);
#pragma unroll
      for (int i = 0; i < NA / 2; ++i) slot[i * 32 + lane] = __uint_as_float(p[i]);
      slot[(NA / 2) * 32 + lane] = alpha[0], slot[(NA / 2 + 1) * 32 + lane] = alpha[1];
      sync();
    }
  }

  // After the loop: the rows' running max and sum from the warp that computed them, past the P
  // and rescale factors that its partner may still be reading.
  template <int NA>
  __device__ __forceinline__ void hand_over_stats(float (&m_run)[2], float (&l_run)[2]) const {
    float* stats = slot + (NA / 2 + 2) * 32;
    if (computes) {
      stats[lane] = m_run[0], stats[32 + lane] = m_run[1];
      stats[64 + lane] = l_run[0], stats[96 + lane] = l_run[1];
    }
    sync();
    if (!computes) {
      m_run[0] = stats[lane], m_run[1] = stats[32 + lane];
      l_run[0] = stats[64 + lane], l_run[1] = stats[96 + lane];
    }
  }
};
#endif

}  // namespace gs::cuda::attn
