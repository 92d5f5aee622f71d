// The vision tower's attention: FlashAttention-2 over packed images with mma.sync m16n8k16.
//
// One CTA takes a tile of query rows of one (image, head) and walks every key tile of that image:
// no causal bound, no window, no page table, so the K/V tiles stream straight from the strided
// q/k/v views through a cp.async double buffer. Each warp owns 16·MT query rows and the whole
// head dim, so, unlike the text kernels (head dims 256 / 512, split across warps), S stays in
// registers: the S accumulator of two n8 key tiles is exactly the A fragment of one k16 step of
// P·V, so P never goes through shared memory and the warps never wait for each other inside a tile.
//
// Head dim 72 (the large towers) is not a multiple of the k16 step: rows are padded to 80 in
// shared memory with zeros (zero columns of Q and K add nothing to S; the padded output columns
// are dropped). Shared rows are HDP + 8 elements long, which puts the 8 rows one ldmatrix reads
// on 8 different 16-byte bank groups (144- and 176-byte strides), so no swizzle is needed.
//
// Keys past the image's last row (the last tile of an image) are zero-filled by cp.async and
// masked to -inf; query rows past it compute on zeros and are not stored. Every row sees at least
// itself, so the running max is finite after the first tile and the row sum is positive.
#include <cuda_bf16.h>

#include <atomic>
#include <cmath>
#include <cstdint>

#include "kernels/cuda/attention_mma.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launch_util.h"
#include "kernels/cuda/vision_attention.h"

namespace gs::cuda {
namespace vattn {
namespace {

using bf16 = __nv_bfloat16;
using attn::cp_async16;
using attn::cp_async_commit;
using attn::cp_async_wait;
using attn::ldmatrix_x4;
using attn::ldmatrix_x4_trans;
using attn::mma_bf16_16816;
using attn::pack_bf16x2;

struct Args {
  const bf16* q;
  const bf16* k;
  const bf16* v;
  bf16* out;
  const int* cu_rows;
  int64_t q_stride, k_stride, v_stride;
  int heads;
};

template <int HD, int MT, int BN>
struct Config {
  static constexpr int kHeadDim = HD;
  static constexpr int kPadDim = (HD + 15) / 16 * 16;  // whole k16 steps of Q·Kᵀ
  static constexpr int kChunks = HD / 8;               // 16-byte chunks read from global per row
  static constexpr int kPadChunks = kPadDim / 8;
  static constexpr int kLd = kPadDim + 8;              // shared row stride (elements)
  static constexpr int kWarps = 4;
  static constexpr int kThreads = 32 * kWarps;
  static constexpr int kMTiles = MT;                   // m16 row tiles of one warp
  static constexpr int kBlockM = 16 * MT * kWarps;
  static constexpr int kBlockN = BN;
  static constexpr int kStages = 2;
  static constexpr int kKSteps = kPadDim / 16;
  static constexpr int kSTiles = BN / 8;               // n8 tiles of S per m16 row tile
  static constexpr int kOTiles = kPadDim / 8;          // n8 tiles of O (padding included)
  static constexpr int kOutTiles = HD / 8;             // the ones stored
  static constexpr size_t kSmemBytes = size_t(kBlockM + 2 * kStages * BN) * kLd * 2;
  static_assert(HD % 8 == 0, "rows are read in 16-byte chunks");
  static_assert(BN % 16 == 0 && kOTiles % 2 == 0, "P·V walks k16 steps and n8 pairs");
  static_assert((kLd * 2) % 16 == 0 && (kLd / 8) % 2 == 1, "odd 16-byte stride: conflict-free ldmatrix");
};

template <class C>
__device__ __forceinline__ void load_rows(bf16* dst, const bf16* base, int64_t stride, int row0, int n, int count,
                                          int tid) {
  for (int i = tid; i < count * C::kChunks; i += C::kThreads) {
    const int r = i / C::kChunks, c = i % C::kChunks;
    const bool ok = row0 + r < n;
    const bf16* src = ok ? base + int64_t(row0 + r) * stride + c * 8 : base;
    cp_async16(dst + r * C::kLd + c * 8, src, ok);
  }
}

template <class C>
__global__ void __launch_bounds__(C::kThreads) vision_attention_kernel(const Args a) {
  constexpr int HD = C::kHeadDim, LD = C::kLd, BM = C::kBlockM, BN = C::kBlockN, ST = C::kStages;
  constexpr int MT = C::kMTiles;
  constexpr float kLog2e = 1.4426950408889634f;  // scale 1.0, exponentials in base 2

  pdl_enter();  // q/k/v are the previous kernel's output
  const int img = blockIdx.z, head = blockIdx.y, m0 = blockIdx.x * BM;
  const int row_begin = a.cu_rows[img];
  const int n = a.cu_rows[img + 1] - row_begin;
  if (m0 >= n) return;

  extern __shared__ __align__(128) uint8_t smem[];
  bf16* sQ = reinterpret_cast<bf16*>(smem);
  bf16* sK = sQ + BM * LD;
  bf16* sV = sK + ST * BN * LD;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;

  // The padding columns are never written by cp.async: zero them once.
  if constexpr (C::kPadChunks > C::kChunks) {
    constexpr int kPad = C::kPadChunks - C::kChunks, kRows = BM + 2 * ST * BN;
    for (int i = tid; i < kRows * kPad; i += C::kThreads)
      *reinterpret_cast<uint4*>(sQ + (i / kPad) * LD + (C::kChunks + i % kPad) * 8) = make_uint4(0, 0, 0, 0);
  }

  const int64_t col = int64_t(head) * HD;
  const bf16* qb = a.q + int64_t(row_begin) * a.q_stride + col;
  const bf16* kb = a.k + int64_t(row_begin) * a.k_stride + col;
  const bf16* vb = a.v + int64_t(row_begin) * a.v_stride + col;
  const int n_tiles = (n + BN - 1) / BN;
  auto load_kv = [&](int tile, int stage) {
    load_rows<C>(sK + stage * BN * LD, kb, a.k_stride, tile * BN, n, BN, tid);
    load_rows<C>(sV + stage * BN * LD, vb, a.v_stride, tile * BN, n, BN, tid);
  };
  load_rows<C>(sQ, qb, a.q_stride, m0, n, BM, tid);
#pragma unroll
  for (int s = 0; s < ST - 1; ++s) {
    if (s < n_tiles) load_kv(s, s);
    cp_async_commit();  // group 0 also holds Q
  }

  uint32_t qf[MT][C::kKSteps][4];
  float o[MT][C::kOTiles][4];
  float m_run[MT][2], l_run[MT][2];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
    for (int j = 0; j < C::kOTiles; ++j) o[mt][j][0] = o[mt][j][1] = o[mt][j][2] = o[mt][j][3] = 0.f;
    m_run[mt][0] = m_run[mt][1] = -INFINITY;
    l_run[mt][0] = l_run[mt][1] = 0.f;
  }

  for (int it = 0; it < n_tiles; ++it) {
    const int stage = it % ST;
    __syncthreads();  // the stage refilled below was last read in iteration it - 1
    if (it + ST - 1 < n_tiles) load_kv(it + ST - 1, (it + ST - 1) % ST);
    cp_async_commit();
    cp_async_wait<ST - 1>();
    __syncthreads();
    if (it == 0) {
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int kk = 0; kk < C::kKSteps; ++kk)
          ldmatrix_x4(qf[mt][kk], sQ + ((warp * MT + mt) * 16 + (lane & 15)) * LD + (kk * 2 + (lane >> 4)) * 8);
    }
    const bf16* tK = sK + stage * BN * LD;
    const bf16* tV = sV + stage * BN * LD;

    float s[MT][C::kSTiles][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int j = 0; j < C::kSTiles; ++j) s[mt][j][0] = s[mt][j][1] = s[mt][j][2] = s[mt][j][3] = 0.f;
#pragma unroll
    for (int kk = 0; kk < C::kKSteps; ++kk)
#pragma unroll
      for (int np = 0; np < C::kSTiles / 2; ++np) {
        uint32_t kf[4];
        ldmatrix_x4(kf, tK + (np * 16 + (lane & 7) + ((lane >> 4) << 3)) * LD + (kk * 2 + ((lane >> 3) & 1)) * 8);
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          mma_bf16_16816(s[mt][2 * np], qf[mt][kk], kf[0], kf[1]);
          mma_bf16_16816(s[mt][2 * np + 1], qf[mt][kk], kf[2], kf[3]);
        }
      }

    // Online softmax; only an image's last tile has keys to mask.
    const int k0 = it * BN;
    const bool tail = k0 + BN > n;
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
      float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
      for (int j = 0; j < C::kSTiles; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          float x = s[mt][j][e] * kLog2e;
          if (tail && k0 + j * 8 + (lane & 3) * 2 + (e & 1) >= n) x = -INFINITY;
          s[mt][j][e] = x;
          mx[e >> 1] = fmaxf(mx[e >> 1], x);
        }
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 1));
        mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 2));
        const float m_new = fmaxf(m_run[mt][h], mx[h]);  // finite: every tile holds a key of the image
        const float alpha = exp2f(m_run[mt][h] - m_new);
        m_run[mt][h] = m_new;
        l_run[mt][h] *= alpha;
#pragma unroll
        for (int j = 0; j < C::kOTiles; ++j) o[mt][j][2 * h] *= alpha, o[mt][j][2 * h + 1] *= alpha;
      }
#pragma unroll
      for (int j = 0; j < C::kSTiles; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          s[mt][j][e] = exp2f(s[mt][j][e] - m_run[mt][e >> 1]);
          l_run[mt][e >> 1] += s[mt][j][e];
        }
    }

    // O += P·V with P straight from the S registers.
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk) {
      uint32_t pa[MT][4];
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        pa[mt][0] = pack_bf16x2(s[mt][2 * kk][0], s[mt][2 * kk][1]);
        pa[mt][1] = pack_bf16x2(s[mt][2 * kk][2], s[mt][2 * kk][3]);
        pa[mt][2] = pack_bf16x2(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
        pa[mt][3] = pack_bf16x2(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
      }
#pragma unroll
      for (int dp = 0; dp < C::kOTiles / 2; ++dp) {
        uint32_t vf[4];
        ldmatrix_x4_trans(vf, tV + (kk * 16 + (lane & 7) + (((lane >> 3) & 1) << 3)) * LD + (dp * 2 + (lane >> 4)) * 8);
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          mma_bf16_16816(o[mt][2 * dp], pa[mt], vf[0], vf[1]);
          mma_bf16_16816(o[mt][2 * dp + 1], pa[mt], vf[2], vf[3]);
        }
      }
    }
  }
  cp_async_wait<0>();

  const int64_t out_stride = int64_t(a.heads) * HD;
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float l = l_run[mt][h];
      l += __shfl_xor_sync(0xffffffffu, l, 1);
      l += __shfl_xor_sync(0xffffffffu, l, 2);
      const int r = m0 + (warp * MT + mt) * 16 + (lane >> 2) + 8 * h;
      if (r >= n) continue;
      const float inv = 1.f / l;
      bf16* dst = a.out + int64_t(row_begin + r) * out_stride + col + (lane & 3) * 2;
#pragma unroll
      for (int j = 0; j < C::kOutTiles; ++j)
        *reinterpret_cast<uint32_t*>(dst + j * 8) = pack_bf16x2(o[mt][j][2 * h] * inv, o[mt][j][2 * h + 1] * inv);
    }
}

template <class C>
void launch(const Args& a, int num_images, int max_rows, cudaStream_t stream) {
  allow_smem(vision_attention_kernel<C>, C::kSmemBytes);
  const dim3 grid((max_rows + C::kBlockM - 1) / C::kBlockM, a.heads, num_images);
  launch_pdl("vision_attention_kernel", vision_attention_kernel<C>, grid, C::kThreads, C::kSmemBytes, stream, a);
  GS_CUDA_LAUNCHED("vision_attention_kernel");
}

template <int HD>
void launch_head_dim(VisionTile tile, const Args& a, int num_images, int max_rows, cudaStream_t stream) {
  switch (tile) {
    case VisionTile::Rows16Keys64: return launch<Config<HD, 1, 64>>(a, num_images, max_rows, stream);
    case VisionTile::Rows32Keys32: return launch<Config<HD, 2, 32>>(a, num_images, max_rows, stream);
    case VisionTile::Rows32Keys64: return launch<Config<HD, 2, 64>>(a, num_images, max_rows, stream);
  }
  fail("vision_attention: unknown tile shape");
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

}  // namespace

// H200, 2520-row images (bench-kernels, 2026-11-28): 32 rows a warp reuse each K/V fragment
// twice and win where the grid is large: 12x64 at 1 and 16 images 200 / 237 TFLOP/s against 173 /
// 213 with 16 rows; 16x72 at 16 images 223 against 191. At head dim 72 that tile needs 255
// registers (2 CTAs an SM), so a one-image grid (320 CTAs, 1.2 waves) loses: 149 against 159 with
// 16 rows (3 CTAs an SM); 32 rows there only once the grid is 4 full waves or more.
// (32-key tiles with 32 rows never won.)
VisionTile choose_vision_tile(int num_images, int max_rows, int heads, int head_dim) {
  if (head_dim == 64) return VisionTile::Rows32Keys64;
  const int64_t ctas = int64_t((max_rows + 127) / 128) * heads * num_images;
  return ctas >= int64_t(4) * 2 * sm_count() ? VisionTile::Rows32Keys64 : VisionTile::Rows16Keys64;
}

const char* vision_tile_name(VisionTile t) {
  switch (t) {
    case VisionTile::Rows16Keys64: return "16 rows/warp, 64-key tiles";
    case VisionTile::Rows32Keys32: return "32 rows/warp, 32-key tiles";
    case VisionTile::Rows32Keys64: return "32 rows/warp, 64-key tiles";
  }
  return "?";
}

void vision_attention_tile(VisionTile tile, const bf16* q, int64_t q_stride, const bf16* k, int64_t k_stride,
                           const bf16* v, int64_t v_stride, bf16* out, const int* cu_rows, int num_images,
                           int max_rows, int heads, int head_dim, cudaStream_t stream) {
  require(head_dim == 64 || head_dim == 72, "vision_attention: head_dim ", head_dim,
          " is not supported (the vision towers use 64 and 72)");
  require(heads >= 1, "vision_attention: heads must be >= 1, got ", heads);
  require(num_images >= 0 && num_images <= 65535, "vision_attention: num_images ", num_images,
          " is outside 0..65535");
  require(max_rows >= 0, "vision_attention: max_rows must be >= 0, got ", max_rows);
  if (num_images == 0 || max_rows == 0) return;
  const int64_t width = int64_t(heads) * head_dim;
  const struct {
    const char* name;
    const void* p;
    int64_t stride;
  } views[] = {{"q", q, q_stride}, {"k", k, k_stride}, {"v", v, v_stride}, {"out", out, width}};
  for (const auto& view : views) {
    require(view.p != nullptr, "vision_attention: ", view.name, " is null");
    require(aligned16(view.p), "vision_attention: ", view.name, " is not 16-byte aligned");
    require(view.stride >= width && view.stride % 8 == 0, "vision_attention: ", view.name, " row stride ",
            view.stride, " must be >= heads*head_dim (", width, ") and a multiple of 8");
  }
  require(cu_rows != nullptr, "vision_attention: cu_rows is null");
  const Args a{q, k, v, out, cu_rows, q_stride, k_stride, v_stride, heads};
  if (head_dim == 64) launch_head_dim<64>(tile, a, num_images, max_rows, stream);
  else launch_head_dim<72>(tile, a, num_images, max_rows, stream);
}

}  // namespace vattn

void vision_attention(const __nv_bfloat16* q, int64_t q_stride, const __nv_bfloat16* k, int64_t k_stride,
                      const __nv_bfloat16* v, int64_t v_stride, __nv_bfloat16* out, const int* cu_rows,
                      int num_images, int max_rows, int heads, int head_dim, cudaStream_t stream) {
  const vattn::VisionTile tile = vattn::choose_vision_tile(num_images, max_rows, heads, head_dim);
  vattn::vision_attention_tile(tile, q, q_stride, k, k_stride, v, v_stride, out, cu_rows, num_images, max_rows, heads,
                               head_dim, stream);
}

double vision_attention_flops(const int* h_cu_rows, int num_images, int heads, int head_dim) {
  double pairs = 0;
  for (int i = 0; i < num_images; ++i) {
    const double n = h_cu_rows[i + 1] - h_cu_rows[i];
    pairs += n * n;
  }
  return pairs * heads * 4.0 * head_dim;
}

}  // namespace gs::cuda
