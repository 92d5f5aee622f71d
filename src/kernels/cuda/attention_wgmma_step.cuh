// The consumer warpgroup's tile step of the Hopper attention kernels, shared by
// attention_wgmma_kernel and the persistent kernel: S and P·V issued as wgmma, the online softmax
// of one key tile, P packed as the register A operand, the running O rescaled, the Q rows gathered
// where TMA does not apply, and the output stored without TMA.
#pragma once
#include <cuda_bf16.h>

#include <cstdint>

#include "kernels/cuda/attention_cta.cuh"
#include "kernels/cuda/attention_mma.cuh"
#include "kernels/cuda/attention_params.cuh"
#include "kernels/cuda/attention_wgmma_ops.cuh"
#include "kernels/cuda/attention_wgmma_sync.cuh"

namespace gs::cuda::attn {

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
// The kernel's dynamic shared memory from its first 1024-byte boundary (swizzled slabs need their
// shared-memory address 1024-byte aligned): that address and a generic pointer to it.
struct AlignedSmem {
  uint32_t base;
  uint8_t* ptr;
};
__device__ __forceinline__ AlignedSmem align_smem_1024(uint8_t* raw) {
  const uint32_t raw_addr = smem_addr(raw);
  const uint32_t base = (raw_addr + 1023u) & ~1023u;
  return {base, raw + (base - raw_addr)};
}

// S = Q·Kᵀ of stage s over the warpgroup's contraction columns: issued, not waited for. The first
// k-step overwrites sc (scale-d = 0), so sc needs no zeroing. The descriptors are built once per
// CTA from the tile bases; a k-step or a stage moves the start address, whose field (address >> 4,
// 14 bits, shared memory < 256 KB) takes the offset >> 4 without carrying into the others, so no
// descriptor is rebuilt per tile (docs/kernel-policy.md, "Attention: wgmma prefill").
template <class C>
__device__ __forceinline__ void wg_issue_s(float (&sc)[C::kAcc], uint64_t q_desc, uint64_t k_desc, int s) {
  const uint64_t kd = k_desc + ((s * C::kTileBytes) >> 4);
#pragma unroll
  for (int kk = 0; kk < 16; ++kk) {
    // Head-dim columns kk·16 .. of this warpgroup: slab kk / 4, 32 bytes per k16 step within it.
    constexpr uint32_t kQSlab = C::kBlockM * 128, kKSlab = C::kBlockN * 128;
    const uint32_t qo = (kk >> 2) * kQSlab + (kk & 3) * 32, ko = (kk >> 2) * kKSlab + (kk & 3) * 32;
    wg::wgmma_ss<C::kBlockN>(sc, q_desc + (qo >> 4), kd + (ko >> 4), kk > 0);
  }
  wg::commit();
}
// O += P·V[:, the warpgroup's columns] of stage s; P is the register A operand: the S accumulator
// of n8 tiles 2kk and 2kk+1 is the m16k16 A fragment of keys [16kk, 16kk + 16).
template <class C>
__device__ __forceinline__ void wg_issue_pv(float (&o)[128], const uint32_t (&p)[C::kAcc / 2], uint64_t v_desc,
                                            int s) {
  const uint64_t vd = v_desc + ((s * C::kTileBytes) >> 4);
#pragma unroll
  for (int kk = 0; kk < C::kBlockN / 16; ++kk) {
    const uint32_t pa[4] = {p[4 * kk], p[4 * kk + 1], p[4 * kk + 2], p[4 * kk + 3]};
    wg::wgmma_m64n256k16_rs_tb(o, pa, vd + ((kk * 16 * 128) >> 4));
  }
  wg::commit();
}
// Rows [r0, r0 + n) of the query tile (bm rows, zero past the sequence's end), head-dim columns
// [col0, col0 + CD), gathered by 16-byte cp.async into the swizzled slabs at sQ by threads t of
// nt, landed and ordered before the wgmma reads (the caller's barrier then publishes them to the
// other threads).
template <int HD, int BM, int CD = HD>
__device__ __forceinline__ void gather_q_rows(const TileArgs& a, const CtaPlace& cta, uint32_t sQ, int r0, int n,
                                              int t, int nt, int col0 = 0) {
  constexpr int kChunks = CD / 8;
  for (int i = t; i < n * kChunks; i += nt) {
    const int r = r0 + i / kChunks, c = i % kChunks;
    bool ok;
    const __nv_bfloat16* src = q_chunk_src<HD>(a, cta, r, col0 / 8 + c, ok);
    const uint32_t dst = sQ + (c >> 3) * (BM * 128) + r * 128 + (((c & 7) ^ (r & 7)) << 4);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(ok ? 16 : 0));
  }
  cp_async_commit();
  cp_async_wait<0>();
  wg::fence_proxy_async();
}
#endif

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
// This thread's part of O's normalised bf16 rows r and r + 8 (of 64), register columns
// 8·j0 .. 8·(j0 + NJ), into swizzled slabs of 64 rows at `stage` (8 register columns a slab),
// where the persistent kernels' epilogues send it out as TMA boxes. inv: 1 / l of the two rows.
template <int NJ>
__device__ __forceinline__ void stage_o_rows(const float (&o)[128], const float (&inv)[2], uint32_t stage, int r,
                                             int lane, int j0) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int rh = r + 8 * h;
    const uint32_t row = stage + rh * 128 + (lane & 3) * 4;
#pragma unroll
    for (int jj = 0; jj < NJ; ++jj) {
      const int j = j0 + jj;
      const uint32_t dst = row + (jj >> 3) * (64 * 128) + (((j & 7) ^ (rh & 7)) << 4);
      const uint32_t v = pack_bf16x2(o[4 * j + 2 * h] * inv[h], o[4 * j + 2 * h + 1] * inv[h]);
      asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(dst), "r"(v) : "memory");
    }
  }
}
#endif

// What a warp's rows may see, for the mask of softmax_tile: the keys below kv_len, this thread's
// two rows' positions (-1 past the end) and the span of its warp's (or warpgroup's) rows.
// The vision overlay (gemma4-architecture.md §3.4), set only where the launch has it and the warp
// holds an image row (else mm stays null and the mask is the text one): a row of image block
// qblk >= 0 also sees every key of this step in the same block; key k >= first_new_key of this
// step has block mm[k - first_new_key] (mm: the sequence's first token's entry of mm_block).
struct TileRows {
  int kv_len, window, wpmin, wpmax;
  int qpos[2];
  const int* mm = nullptr;
  int first_new_key = 0;
  int qblk[2] = {-1, -1};
  bool mm_in_window = false;  // an image's earlier keys only inside the window (transformers 5.17)
};

// The overlay fields of `r` for a thread whose rows are packed rows pr and pr + 8 of a sequence
// (starting at token q0, `rows` packed rows, this step's keys from first_new_key), when the launch
// has the overlay (a.mm_block set). Warp-wide.
__device__ __forceinline__ void set_overlay(TileRows& r, const TileArgs& a, int q0, int rows, int first_new_key,
                                            int pr) {
  if (a.mm_block == nullptr) return;
#pragma unroll
  for (int h = 0; h < 2; ++h) r.qblk[h] = pr + 8 * h < rows ? a.mm_block[q0 + (pr + 8 * h) / a.group] : -1;
  if (__any_sync(0xffffffffu, r.qblk[0] >= 0 || r.qblk[1] >= 0)) r.mm = a.mm_block + q0, r.first_new_key = first_new_key;
  r.mm_in_window = a.mm_in_window;
}

// Scale (log2 domain), mask on boundary tiles, online softmax: the unnormalised probabilities of
// the tile replace the scores in sc (f32; pack_p_tile turns them into the bf16 A operand), the
// factor the running O must be rescaled by goes into alpha. OV: the launch has the vision overlay
// (a separate instantiation, so text-only kernels carry none of its code or registers).
template <int BN, bool OV = false>
__device__ __forceinline__ void softmax_tile(float (&sc)[BN / 2], int k0, const TileRows& r, float scale_log2,
                                             int lane, float (&m_run)[2], float (&l_run)[2], float (&alpha)[2]) {
  constexpr int NA = BN / 2;
  // Boundary tiles only (one warp-uniform branch, not one per score): scores of keys a row cannot
  // see become -inf.
  const bool all_visible =
      k0 + BN <= r.kv_len && k0 + BN - 1 <= r.wpmin && (r.window == 0 || r.wpmax - k0 < r.window);
  if (!all_visible) {
#pragma unroll
    for (int i = 0; i < NA; ++i) {
      const int h = (i >> 1) & 1;
      const int key = k0 + (i >> 2) * 8 + (lane & 3) * 2 + (i & 1);
      bool ok = key < r.kv_len && key <= r.qpos[h] && (r.window == 0 || r.qpos[h] - key < r.window);
      if constexpr (OV)
        if (r.mm != nullptr && !ok && r.qblk[h] >= 0 && key >= r.first_new_key && key < r.kv_len)
          ok = r.mm[key - r.first_new_key] == r.qblk[h] &&
               (!r.mm_in_window || r.window == 0 || r.qpos[h] - key < r.window);
      if (!ok) sc[i] = -INFINITY;
    }
  }
  // The max of the raw scores: the scale (>= 0, see choose_kernel) preserves the order, so it is
  // applied once per row here and fused into the exponent's FFMA below.
  float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
  for (int i = 0; i < NA; ++i) mx[(i >> 1) & 1] = fmaxf(mx[(i >> 1) & 1], sc[i]);
  float base_m[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 1));
    mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 2));
    mx[h] *= scale_log2;  // log2 domain
    // The running max moves only when a score exceeds it by more than 8 (log2 domain; the
    // FlashAttention-4 rule): until then p = 2^(x - m) <= 256, exact enough in f32 and in bf16's
    // relative precision, and O / l is the same softmax. So most tiles leave O unscaled (alpha 1),
    // and rescale_o_tile is skipped by whole warps (128 FMULs a tile).
    const float m_new = fmaxf(m_run[h], mx[h]);
    const bool grow = m_new > m_run[h] + 8.f;  // false while nothing is visible (both -inf)
    const float m_old = m_run[h];
    if (grow) m_run[h] = m_new;
    base_m[h] = m_run[h] == -INFINITY ? 0.f : m_run[h];  // nothing visible yet: stay at zero
    alpha[h] = grow ? fast_exp2(m_old - base_m[h]) : 1.f;
    l_run[h] *= alpha[h];
  }
  // p = 2^(x·scale - m): one FFMA and one MUFU.EX2 a score (exp2f adds a denormal range check and
  // two FMULs around each; probabilities below 2^-126 of the row max add nothing anyway).
#pragma unroll
  for (int i = 0; i < NA; i += 2) {
    const int h = (i >> 1) & 1;
    const float e0 = fast_exp2(fmaf(sc[i], scale_log2, -base_m[h]));
    const float e1 = fast_exp2(fmaf(sc[i + 1], scale_log2, -base_m[h]));
    l_run[h] += e0 + e1;
    sc[i] = e0, sc[i + 1] = e1;
  }
}
template <int NA>
__device__ __forceinline__ void pack_p_tile(const float (&sc)[NA], uint32_t (&p)[NA / 2]) {
#pragma unroll
  for (int i = 0; i < NA; i += 2) p[i >> 1] = pack_bf16x2(sc[i], sc[i + 1]);
}
__device__ __forceinline__ void rescale_o_tile(float (&o)[128], const float (&alpha)[2]) {
  if (!__any_sync(0xffffffffu, alpha[0] != 1.f || alpha[1] != 1.f)) return;
#pragma unroll
  for (int j = 0; j < 32; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) o[4 * j + e] *= alpha[e >> 1];
}

// The epilogue without TMA (tiles cut by their sequence's end, split partials): this thread's
// rows pr and pr + 8 of the sequence (columns col0 + ...), normalised bf16 into out, or
// unnormalised f32 into the split partials with the running max and sum (write_ml: this
// warpgroup writes those).
template <int HD>
__device__ __forceinline__ void store_o_direct(const TileArgs& a, const float (&o)[128], const float (&m_run)[2],
                                               const float (&l_run)[2], const CtaPlace& cta, int pr0, int col0,
                                               int lane, bool write_ml) {
  using bf16 = __nv_bfloat16;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int pr = pr0 + 8 * h;
    if (pr >= cta.rows) continue;
    const int t = cta.q0 + pr / a.group, head = cta.kvh * a.group + pr % a.group;
    const int col = col0 + (lane & 3) * 2;
    const float l = l_run[h];
    if (a.num_splits == 1) {
      const float inv = l > 0.f ? 1.f / l : 0.f;
      bf16* dst = a.out + (int64_t(t) * a.num_q_heads + head) * HD + col;
#pragma unroll
      for (int j = 0; j < 32; ++j)
        *reinterpret_cast<uint32_t*>(dst + j * 8) = pack_bf16x2(o[4 * j + 2 * h] * inv, o[4 * j + 2 * h + 1] * inv);
    } else {
      const int64_t prow = (int64_t(cta.split) * a.num_tokens + t) * a.num_q_heads + head;
      float* dst = a.part_o + prow * HD + col;
#pragma unroll
      for (int j = 0; j < 32; ++j)
        *reinterpret_cast<float2*>(dst + j * 8) = make_float2(o[4 * j + 2 * h], o[4 * j + 2 * h + 1]);
      if (write_ml && (lane & 3) == 0) a.part_ml[2 * prow] = m_run[h], a.part_ml[2 * prow + 1] = l;
    }
  }
}

}  // namespace gs::cuda::attn
