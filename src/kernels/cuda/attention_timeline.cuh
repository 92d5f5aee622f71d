// Per-CTA timelines of the wgmma attention kernels, for diagnostic builds only
// (cmake -DGEMMASERVE_ATTN_TIMELINE=ON defines GS_ATTN_TIMELINE for attention_wgmma.cu alone).
// Thread 0 of each CTA role records when it reaches the points below; with GS_ATTN_TIMELINE=PREFIX
// in the environment, every launch of a kernel configuration writes PREFIX-<config>.csv (the last
// launch stays), which tools/gpu/attention_timeline.py turns into the prologue, main loop,
// epilogue and inter-CTA gaps of the launch. Without the define, GS_TL_MARK compiles to nothing
// and the two host hooks do nothing.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#ifdef GS_ATTN_TIMELINE
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "kernels/cuda/cuda_check.h"
#endif

namespace gs::cuda::attn::timeline {

#ifdef GS_ATTN_TIMELINE
enum Event : int {
  kStart,        // kernel entry
  kSetup,        // barriers and row positions ready
  kFirstLookup,  // producer: page table of the first tile read
  kQLanded,      // consumers: Q in shared memory
  kFirstK,       // consumer warpgroup 0: first K tile landed
  kFirstPv,      // consumer warpgroup 0: first P·V complete
  kLoopEnd0,     // consumer warpgroup 0: last P·V complete
  kLoopEnd1,     // consumer warpgroup 1: last P·V complete
  kEnd,          // consumer warpgroup 0: output stored
  kIssued,       // persistent kernel, producer: every tile of the item issued
  kPublished,    // persistent kernel, producer: the item's place computed and handed over
  // Sums over the main loop of consumer thread 0 (clock64 cycles in the clk columns, ns columns
  // 1): waiting for K, S issued to done, the S exchange, the softmax up to the P·V issue (O
  // rescale included), waiting for V, P·V issued to done.
  kSpanWaitK,
  kSpanS,
  kSpanExchange,
  kSpanSoftmax,
  kSpanWaitV,
  kSpanPv,
  kEvents
};
constexpr int kFirstSpan = kSpanWaitK, kSpans = kEvents - kSpanWaitK;
constexpr int kMaxCtas = 16384;
// [cta][event] globaltimer (ns) and clock64; [cta][kEvents] holds the SM id, [kEvents + 1] the
// CTA's key tiles.
__device__ unsigned long long g_ns[kMaxCtas][kEvents + 2];
__device__ long long g_clk[kMaxCtas][kEvents];

__device__ __forceinline__ int cta_index() {
  return int(blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z));
}
// `cta`: the row of the record (a persistent kernel records per work item).
__device__ __forceinline__ void mark_at(int cta, int e) {
  if (cta >= kMaxCtas) return;
  unsigned long long ns;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
  g_ns[cta][e] = ns;
  g_clk[cta][e] = clock64();
}
__device__ __forceinline__ void mark(int e) { mark_at(cta_index(), e); }
__device__ __forceinline__ void note_tiles_at(int cta, int tiles) {
  if (cta >= kMaxCtas) return;
  unsigned smid;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
  g_ns[cta][kEvents] = smid, g_ns[cta][kEvents + 1] = unsigned(tiles);
}
__device__ __forceinline__ void note_tiles(int tiles) { note_tiles_at(cta_index(), tiles); }
#define GS_TL_MARK(cond, e)                                      \
  do {                                                           \
    if (cond) ::gs::cuda::attn::timeline::mark(::gs::cuda::attn::timeline::e); \
  } while (0)
#define GS_TL_NOTE_TILES(cond, tiles)                                          \
  do {                                                                         \
    if (cond) ::gs::cuda::attn::timeline::note_tiles(tiles);                   \
  } while (0)
#define GS_TL_MARK_AT(cond, cta, e)                                             \
  do {                                                                          \
    if (cond) ::gs::cuda::attn::timeline::mark_at(cta, ::gs::cuda::attn::timeline::e); \
  } while (0)
#define GS_TL_NOTE_TILES_AT(cond, cta, tiles)                                  \
  do {                                                                         \
    if (cond) ::gs::cuda::attn::timeline::note_tiles_at(cta, tiles);           \
  } while (0)

// Where consumer thread 0's main loop spends its cycles (the kSpan* events): start() before a
// span, stop(span) after it, record() once after the loop.
struct LoopSpans {
  long long sum[kSpans] = {};
  long long t0 = 0;
  __device__ __forceinline__ void start() { t0 = clock64(); }
  __device__ __forceinline__ void stop(int span) { sum[span - kFirstSpan] += clock64() - t0; }
  __device__ __forceinline__ void record(bool cond) const {
    if (!cond) return;
    const int cta = cta_index();
    if (cta >= kMaxCtas) return;
    for (int i = 0; i < kSpans; ++i) g_ns[cta][kFirstSpan + i] = 1, g_clk[cta][kFirstSpan + i] = sum[i];
  }
};

// Before a launch: whether to record it, and the buffers cleared.
inline bool begin(cudaStream_t stream) {
  if (!std::getenv("GS_ATTN_TIMELINE")) return false;
  void* p = nullptr;
  GS_CUDA_CHECK(cudaGetSymbolAddress(&p, g_ns));
  GS_CUDA_CHECK(cudaMemsetAsync(p, 0, sizeof(g_ns), stream));
  return true;
}
// After it: waits for the launch and writes PREFIX-<config>.csv.
inline void end(bool recording, const std::string& config, int64_t ctas, cudaStream_t stream) {
  if (!recording) return;
  static unsigned long long ns[kMaxCtas][kEvents + 2];
  static long long clk[kMaxCtas][kEvents];
  GS_CUDA_CHECK(cudaStreamSynchronize(stream));
  GS_CUDA_CHECK(cudaMemcpyFromSymbol(ns, g_ns, sizeof(ns)));
  GS_CUDA_CHECK(cudaMemcpyFromSymbol(clk, g_clk, sizeof(clk)));
  const std::string name = std::string(std::getenv("GS_ATTN_TIMELINE")) + "-" + config + ".csv";
  FILE* f = std::fopen(name.c_str(), "w");
  if (!f) return;
  std::fprintf(f, "cta,smid,tiles");
  for (int e = 0; e < kEvents; ++e) std::fprintf(f, ",ns%d", e);
  for (int e = 0; e < kEvents; ++e) std::fprintf(f, ",clk%d", e);
  std::fprintf(f, "\n");
  for (int c = 0; c < int(std::min<int64_t>(ctas, kMaxCtas)); ++c) {
    std::fprintf(f, "%d,%llu,%llu", c, ns[c][kEvents], ns[c][kEvents + 1]);
    for (int e = 0; e < kEvents; ++e) std::fprintf(f, ",%llu", ns[c][e]);
    for (int e = 0; e < kEvents; ++e) std::fprintf(f, ",%lld", clk[c][e]);
    std::fprintf(f, "\n");
  }
  std::fclose(f);
}
#else
#define GS_TL_MARK(cond, e) \
  do {                      \
  } while (0)
#define GS_TL_NOTE_TILES(cond, tiles) \
  do {                                \
  } while (0)
#define GS_TL_MARK_AT(cond, cta, e) \
  do {                              \
  } while (0)
#define GS_TL_NOTE_TILES_AT(cond, cta, tiles) \
  do {                                        \
  } while (0)
enum Event : int { kSpanWaitK, kSpanS, kSpanExchange, kSpanSoftmax, kSpanWaitV, kSpanPv };
struct LoopSpans {  // compiled to nothing
  __device__ __forceinline__ void start() {}
  __device__ __forceinline__ void stop(int) {}
  __device__ __forceinline__ void record(bool) const {}
};
inline bool begin(cudaStream_t) { return false; }
template <class S>
inline void end(bool, const S&, int64_t, cudaStream_t) {}
#endif

}  // namespace gs::cuda::attn::timeline
