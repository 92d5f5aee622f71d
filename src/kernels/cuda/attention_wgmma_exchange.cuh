// Where the two half contractions of a split-d S = Q·Kᵀ meet, in the hd512 Hopper kernels
// (attention_wgmma.cuh). Each half is 64 rows x BN keys of f32, held as the wgmma accumulator:
// the same (row, key) per register index and thread in both halves, so every exchange below runs
// in register order, [register][thread], without bank conflicts.
//   - sum_s_halves_in_cta: the two warpgroups of one CTA (the pipelined split-d kernels);
//   - ClusterSExchange: the same warpgroup of two CTAs of a cluster (the CLUSTER_SPLIT configuration, not instantiated);
//   - RowSplitSoftmax: warp pairs across the two warpgroups of one CTA, which also share the
//     softmax (the serial split-d kernels).
// In the first two forms both sides add the other's half to their own; float addition
// commutes, so both hold bit-identical S and compute the same softmax, P and row sums.
#pragma once
#include <cstdint>

#include "kernels/cuda/attention_wgmma_step.cuh"
#include "kernels/cuda/attention_wgmma_sync.cuh"

namespace gs::cuda::attn {

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
// sX: 2 x NA x 128 floats, a warpgroup's half at wgi; tq: the thread within its warpgroup.
template <int NA>
__device__ __forceinline__ void sum_s_halves_in_cta(float (&sc)[NA], float* sX, int wgi, int tq) {
#pragma unroll
  for (int i = 0; i < NA; ++i) sX[(wgi * NA + i) * 128 + tq] = sc[i];
  wg::consumer_bar_sync();
#pragma unroll
  for (int i = 0; i < NA; ++i) sc[i] += sX[((1 - wgi) * NA + i) * 128 + tq];
  wg::consumer_bar_sync();  // both have read before the next tile overwrites
}

// Each thread sends its half of S as 16-byte st.async into the partner CTA's X(wgi), which
// completes them as bytes on the partner's x_full(wgi), and adds what the partner sent into its
// own X(wgi). x_empty(wgi) tells the sender that the partner has read the last tile's.
struct ClusterSExchange {
  uint32_t slot;             // this thread's first 16 bytes in this CTA's X(wgi)
  uint32_t x_full, x_empty;  // this CTA's barriers of the warpgroup
  uint32_t peer;             // the partner's rank in the cluster
  int tq, lane, n_tiles;

  template <int NA>
  __device__ __forceinline__ void run(float (&sc)[NA], int it) const {
    constexpr uint32_t kBytes = 64 * (2 * NA) * 4;  // 64 rows x BN keys
    if (it > 0) wg::mbar_wait(x_empty, (it - 1) & 1);  // the partner read the last tile's
    const uint32_t remote = wg::map_to_cta(slot, peer), remote_bar = wg::map_to_cta(x_full, peer);
#pragma unroll
    for (int k = 0; k < NA / 4; ++k)
      wg::st_async_v4(remote + k * 2048, sc[4 * k], sc[4 * k + 1], sc[4 * k + 2], sc[4 * k + 3], remote_bar);
    wg::mbar_wait(x_full, it & 1);
#pragma unroll
    for (int k = 0; k < NA / 4; ++k) {
      const float4 x = wg::ld_shared_v4(slot + k * 2048);
      sc[4 * k] += x.x, sc[4 * k + 1] += x.y, sc[4 * k + 2] += x.z, sc[4 * k + 3] += x.w;
    }
    if (it + 1 < n_tiles) {
      // Re-armed for the next tile's bytes before the partner may send them: it sends only
      // after every warp of this warpgroup has said, below, that it has read these. After the
      // last tile nothing more arrives, so no CTA leaves with a remote arrival still due.
      if (tq == 0) wg::mbar_arrive_expect_tx(x_full, kBytes);
      __syncwarp();
      if (lane == 0) wg::mbar_arrive_cluster(x_empty, peer);
    }
  }
};

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

  template <int NA>
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
      softmax_tile<2 * NA>(sc, k0, rows, scale_log2, lane, m_run, l_run, alpha);
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
