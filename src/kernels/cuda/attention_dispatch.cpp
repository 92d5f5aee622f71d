// paged_attention(): checks the call, plans the launch from the batch's host mirrors (no device
// synchronisation, so a step can be captured in a CUDA graph), and launches the tile kernel,
// followed by the combine kernel when the keys were split.
//
// One kernel family serves every shape; the plan picks its tile and its split:
// - prefill / extend (many rows per sequence): wide tiles of 64 packed rows (on Hopper, head dim
//   256: the wgmma kernel's 128-row tiles, attention_wgmma.cuh; the vision overlay included);
// - decode and verify steps (q_len·group <= 16, or a few sequences of up to 64 such rows): narrow
//   tiles of 16 rows, so a decode row block is one m16 tensor-core tile holding all query heads of
//   a KV head (head dim 512: the split-d decode kernel of attention_decode.cuh);
// - the key range is split (flash-decoding) when that shortens the launch: the number of splits
//   minimises (waves of CTAs) / splits, i.e. fills the SMs without a ragged last wave, each split
//   keeping at least two key tiles (narrow tiles: one), within the workspace the caller provides;
//   the combine kernel merges them (the mma.sync kernels can also merge in their last split CTA:
//   CombineMode::Fused).
#include "kernels/cuda/attention.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "core/error.h"
#include "kernels/cuda/attention_plan.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_allocator.h"
#include "kernels/cuda/kernel_policy.h"
#include "kernels/cuda/launch_util.h"

namespace gs::cuda {
namespace {

using attn::TileKernel;

// Up to 128 splits (the combine's limit, attention_combine.cuh): a batch-1 decode of a long
// context has one CTA per KV head and split, so the splits are what fills the GPU (E2B's full
// layers at 32k context: 2049 key tiles of 16).
constexpr int kMaxSplits = attn::kMaxAttentionSplits;
static_assert(kMaxSplits == kPolicyMaxSplits, "the policy's split bound is the combine's");
// At most this many CTAs in a split launch. An mma.sync CTA covers at most 64 packed rows, so
// their partials never exceed kSplitCtaBudget · 64 rows (what attention_workspace_bytes sizes);
// the 128-row wgmma hd256 CTAs can need more, which the workspace check in plan_attention turns
// into fewer splits.
constexpr int kSplitCtaBudget = 512;
// Key tiles a split keeps at least: one for the narrow (decode) tiles, two otherwise, unless the
// policy says (decision record "Attention: key tiles per split", docs/kernel-policy.md).
static int min_tiles_per_split(bool narrow) {
  const int knob = kernel_policy().attention.min_tiles_per_split;
  return knob > 0 ? knob : narrow ? 1 : 2;
}

size_t partial_bytes(int64_t splits, int64_t tokens, int64_t q_heads, int64_t head_dim) {
  return size_t(splits * tokens * q_heads * (head_dim + 2) * 4);
}

void check_device_i32(const Tensor& t, const char* field) {
  GS_CHECK(t.defined(), "paged_attention: AttentionBatch.{} is undefined", field);
  GS_CHECK(t.device == Device::CUDA && t.dtype == DType::I32,
           "paged_attention: AttentionBatch.{} is {}; expected i32 on the GPU", field, t.str());
}

void validate(const Tensor& q, const AttentionBatch& b, KvGroup group, const KvPool& pool, int cache_layer,
              const AttentionParams& p, const Tensor& out) {
  GS_CHECK(p.head_dim == 256 || p.head_dim == 512,
           "paged_attention: head_dim {} is not supported (Gemma-4 uses 256 and 512)", p.head_dim);
  GS_CHECK(p.num_q_heads > 0 && p.num_kv_heads > 0 && p.num_q_heads % p.num_kv_heads == 0,
           "paged_attention: {} query heads cannot be grouped over {} KV heads", p.num_q_heads, p.num_kv_heads);
  GS_CHECK(p.sliding_window >= 0, "paged_attention: sliding_window {} is negative", p.sliding_window);
  GS_CHECK(std::isfinite(p.scale), "paged_attention: scale {} is not finite", p.scale);
  const int64_t width = int64_t(p.num_q_heads) * p.head_dim;
  for (const auto& [t, name] : {std::pair{&q, "q"}, std::pair{&out, "out"}}) {
    GS_CHECK(t->defined() && t->device == Device::CUDA && t->dtype == DType::BF16,
             "paged_attention: {} is {}; expected bf16 on the GPU", name, t->str());
    GS_CHECK(t->ndim() == 2 && t->dim(0) == b.num_tokens && t->dim(1) == width,
             "paged_attention: {} is {}; expected [{}, {}] (tokens, heads·head_dim)", name, t->str(), b.num_tokens,
             width);
  }
  const char* g = group == KvGroup::Full ? "full" : "sliding";
  for (const auto& [t, name] : {std::pair{&pool.k, "k"}, std::pair{&pool.v, "v"}}) {
    GS_CHECK(t->defined() && t->device == Device::CUDA && t->dtype == DType::BF16,
             "paged_attention: {} KV pool {} is {}; expected bf16 on the GPU", g, name, t->str());
  }
  GS_CHECK(pool.head_dim == p.head_dim && pool.kv_heads == p.num_kv_heads,
           "paged_attention: {} KV pool holds {} heads of dim {}, the layer needs {} of dim {}", g, pool.kv_heads,
           pool.head_dim, p.num_kv_heads, p.head_dim);
  GS_CHECK(cache_layer >= 0 && cache_layer < pool.cache_layers,
           "paged_attention: cache layer {} outside the {} KV pool's {} layers", cache_layer, g, pool.cache_layers);
  GS_CHECK(pool.page_size > 0 && pool.page_size == b.page_size,
           "paged_attention: batch page_size {} differs from the {} KV pool's {}", b.page_size, g, pool.page_size);
  GS_CHECK(pool.k.numel() == int64_t(pool.cache_layers) * pool.num_pages * pool.page_size * pool.kv_heads *
                                 pool.head_dim && pool.v.numel() == pool.k.numel(),
           "paged_attention: {} KV pool tensors {} / {} do not match its geometry [{}, {}, {}, {}, {}]", g,
           pool.k.str(), pool.v.str(), pool.cache_layers, pool.num_pages, pool.page_size, pool.kv_heads,
           pool.head_dim);
  GS_CHECK(b.num_seqs >= 0 && b.num_tokens >= 0 && b.max_q_len >= 0 && b.max_kv_len >= 0,
           "paged_attention: AttentionBatch has negative sizes (seqs {}, tokens {}, max_q_len {}, max_kv_len {})",
           b.num_seqs, b.num_tokens, b.max_q_len, b.max_kv_len);
  if (b.num_tokens == 0) return;
  GS_CHECK(b.num_seqs <= 65535, "paged_attention: {} sequences in one batch; at most 65535 (grid z)", b.num_seqs);
  GS_CHECK(b.num_seqs > 0 && b.max_q_len > 0 && b.max_kv_len >= b.max_q_len,
           "paged_attention: AttentionBatch with {} tokens has {} sequences, max_q_len {}, max_kv_len {}",
           b.num_tokens, b.num_seqs, b.max_q_len, b.max_kv_len);
  check_device_i32(b.positions, "positions");
  check_device_i32(b.q_start, "q_start");
  check_device_i32(b.kv_len, "kv_len");
  check_device_i32(b.page_table[int(group)], group == KvGroup::Full ? "page_table[full]" : "page_table[sliding]");
  GS_CHECK(b.page_table[int(group)].numel() >= int64_t(b.num_seqs) * b.max_pages[int(group)] &&
               int64_t(b.max_pages[int(group)]) * b.page_size >= b.max_kv_len,
           "paged_attention: {} page table {} with {} pages per sequence cannot cover {} sequences of up to {} keys",
           g, b.page_table[int(group)].str(), b.max_pages[int(group)], b.num_seqs, b.max_kv_len);
  if (p.mm_bidirectional) check_device_i32(b.mm_block, "mm_block (needed by the vision overlay)");
  // The kernels trust max_q_len / max_kv_len to size the grid and the page-table reads; check them
  // against the host mirrors when the caller kept them (O(sequences), cheap next to a launch).
  if (!b.h_q_start.empty() || !b.h_kv_len.empty()) {
    GS_CHECK(b.h_q_start.size() == size_t(b.num_seqs) + 1 && b.h_kv_len.size() == size_t(b.num_seqs) &&
                 b.h_q_start.front() == 0 && b.h_q_start.back() == b.num_tokens,
             "paged_attention: host mirrors h_q_start ({} entries) / h_kv_len ({}) do not describe {} sequences of {} "
             "tokens", b.h_q_start.size(), b.h_kv_len.size(), b.num_seqs, b.num_tokens);
    for (int s = 0; s < b.num_seqs; ++s) {
      const int q_len = b.h_q_start[s + 1] - b.h_q_start[s], kv = b.h_kv_len[s];
      GS_CHECK(q_len >= 0 && q_len <= b.max_q_len && kv >= q_len && kv <= b.max_kv_len,
               "paged_attention: sequence {} has q_len {} and kv_len {}, outside max_q_len {} / max_kv_len {}", s,
               q_len, kv, b.max_q_len, b.max_kv_len);
    }
  }
}

}  // namespace

namespace attn {

TileKernelInfo tile_kernel_info(TileKernel k) {
  switch (k) {
    case TileKernel::Hd256Narrow: return {"hd256 narrow 1x4 warps", 256, 16, 32};
    case TileKernel::Hd256WideQuad: return {"hd256 wide 4x4 warps", 256, 64, 64};
    case TileKernel::Hd512Wide: return {"hd512 wide 4x2 warps", 512, 64, 32};
    case TileKernel::Hd256WgmmaSerial: return {"hd256 wgmma serial (sm_90a)", 256, 128, 64};
    case TileKernel::Hd512WgmmaSerialTmaPair:
      return {"hd512 wgmma split d, serial, TMA, CTA pairs (sm_90a)", 512, 64, 64};
    case TileKernel::Hd256WgmmaPersistent: return {"hd256 wgmma serial, persistent (sm_90a)", 256, 128, 64};
    case TileKernel::Hd512WgmmaPairPersistent:
      return {"hd512 wgmma split d, serial, TMA, CTA pairs, persistent (sm_90a)", 512, 64, 64};
    case TileKernel::Hd512Split8Pair: return {"hd512 decode 8 warps split d, 16 keys x3, 2/SM", 512, 16, 16};
    case TileKernel::Hd256Split8: return {"hd256 decode 8 warps split d, 32 keys x2", 256, 16, 32};
  }
  throw Error("attention: unknown tile kernel {}", int(k));
}

// Keys a sequence's row tile can see: a sliding layer's window (plus the tile's own span), not the
// context.
static int64_t visible_keys(const AttentionBatch& b, const AttentionParams& p) {
  if (p.sliding_window > 0 && !p.mm_bidirectional)
    return std::min<int64_t>(b.max_kv_len, int64_t(p.sliding_window) + b.max_q_len);
  return b.max_kv_len;
}

// Verify steps of a few sequences take the narrow tiles too, several row tiles a sequence: each
// tile reads the sequence's visible keys and values again, which costs less than the wgmma
// kernels' fixed cost while the reads stay few (from L2), and more once long contexts, many
// sequences or KV heads multiply them.
static bool narrow_tiles(int64_t rows, const AttentionBatch& b, const AttentionParams& p) {
  if (rows <= 16) return true;
  const AttentionPolicy& policy = kernel_policy().attention;
  if (rows > policy.narrow_max_rows) return false;
  const int64_t kv_bytes_per_tile = int64_t(p.num_kv_heads) * visible_keys(b, p) * p.head_dim * 2 * 2;
  return (rows + 15) / 16 * b.num_seqs * kv_bytes_per_tile <= policy.narrow_max_kv_bytes;
}

// Which kernel serves a batch (`narrow`: on the 16-row tiles, above): the measured winner of each
// shape class (decision records "Attention: ...", docs/kernel-policy.md), with the policy's
// choices for head-dim-256 decode and head-dim-512 prefill.
// The wgmma kernels take the row max of the raw scores and apply the scale in the exponent, which
// needs scale > 0 (a negative scale would reverse the order, zero makes -inf·0 a NaN); other scales
// go to the mma.sync kernels. The vision-block overlay runs in every kernel (the wgmma ones extend
// the key range of CTAs with image rows only, so text-only tiles pay nothing for it).
// Under the batch-invariant policy one narrow kernel per head dim serves every shape: a row's
// result depends on the kernel's key tiles (which start at multiples of the tile's keys in the
// mma.sync kernels) and not on the other rows of its tile, whose masked keys add exact zeros.
static TileKernel choose_kernel(int head_dim, bool narrow, int group, int page_size, float scale) {
  if (kernel_policy().batch_invariant) return head_dim == 256 ? TileKernel::Hd256Narrow : TileKernel::Hd512Split8Pair;
  const AttentionPolicy& policy = kernel_policy().attention;
  if (head_dim == 256 && narrow) {
    const Hd256Decode d = policy.hd256_decode;
    if (d == Hd256Decode::Split8 || (d == Hd256Decode::Auto && group >= 8)) return TileKernel::Hd256Split8;
  }
  if (!narrow && scale > 0.f && attn::wgmma_supported()) {
    if (head_dim == 256) return TileKernel::Hd256WgmmaPersistent;
    if (page_size % 8 == 0)
      return policy.hd512_prefill == Hd512Prefill::PairPersistent ? TileKernel::Hd512WgmmaPairPersistent
                                                                   : TileKernel::Hd512WgmmaSerialTmaPair;
  }
  if (head_dim == 256) return narrow ? TileKernel::Hd256Narrow : TileKernel::Hd256WideQuad;
  return narrow ? TileKernel::Hd512Split8Pair : TileKernel::Hd512Wide;
}

// The policy's cap on the splits (0: none below the combine's limit).
static int64_t max_splits_knob() {
  const int n = kernel_policy().attention.max_splits;
  return n > 0 ? int64_t(n) : int64_t(kMaxSplits);
}

// Splits of the key range: the fewest that minimise ceil(ctas·s / slots) / s, the launch time in
// units of one unsplit CTA's work when `slots` CTAs run at once.
static int choose_splits(int64_t ctas, int64_t slots, int64_t max_splits) {
  int best = 1;
  double best_time = double((ctas + slots - 1) / slots);
  for (int s = 2; s <= max_splits; ++s) {
    const double t = double((ctas * s + slots - 1) / slots) / s;
    if (t < best_time * 0.97) best = s, best_time = t;  // a split must pay for its combine work
  }
  return best;
}

AttentionPlan plan_attention(const Tensor& q, const AttentionBatch& batch, KvGroup group, const KvPool& pool,
                             int cache_layer, const AttentionParams& p, const Tensor& out, void* workspace,
                             size_t workspace_bytes, const TileKernel* force) {
  validate(q, batch, group, pool, cache_layer, p, out);
  AttentionPlan plan;
  if (batch.num_tokens == 0) return plan;

  const int hd = p.head_dim, nkv = p.num_kv_heads, grp = p.num_q_heads / p.num_kv_heads;
  const int64_t rows = int64_t(batch.max_q_len) * grp;
  const bool narrow = narrow_tiles(rows, batch, p);
  plan.kernel = force ? *force : choose_kernel(hd, narrow, grp, pool.page_size, p.scale);
  const TileKernelInfo info = tile_kernel_info(plan.kernel);
  GS_CHECK(info.head_dim == hd, "paged_attention: kernel '{}' cannot serve head dim {}", info.name, hd);
  if (is_wgmma_kernel(plan.kernel)) {
    GS_CHECK(wgmma_supported(), "paged_attention: kernel '{}' needs an sm_90 GPU", info.name);
    GS_CHECK(p.scale > 0.f, "paged_attention: kernel '{}' needs a positive scale, not {}", info.name, p.scale);
  }
  plan.head_dim = hd;
  plan.empty = false;

  const int64_t layer_elems = int64_t(pool.num_pages) * pool.page_size * nkv * hd;
  TileArgs& a = plan.args;
  a.q = q.ptr<const __nv_bfloat16>();
  a.out = out.ptr<__nv_bfloat16>();
  a.k = pool.k.ptr<const __nv_bfloat16>() + cache_layer * layer_elems;
  a.v = pool.v.ptr<const __nv_bfloat16>() + cache_layer * layer_elems;
  a.positions = batch.positions.ptr<const int>();
  a.q_start = batch.q_start.ptr<const int>();
  a.kv_len = batch.kv_len.ptr<const int>();
  a.mm_block = p.mm_bidirectional ? batch.mm_block.ptr<const int>() : nullptr;
  a.mm_in_window = p.mm_block_in_window;
  a.page_table = batch.page_table[int(group)].ptr<const int>();
  a.max_pages = batch.max_pages[int(group)];
  a.page_size = pool.page_size;
  a.page_shift = (pool.page_size & (pool.page_size - 1)) == 0 ? __builtin_ctz(unsigned(pool.page_size)) : -1;
  a.page_stride = int64_t(pool.page_size) * nkv * hd;
  a.token_stride = nkv * hd;
  a.num_q_heads = p.num_q_heads;
  a.group = grp;
  a.window = p.sliding_window;
  a.scale_log2 = p.scale * 1.4426950408889634f;
  a.num_tokens = batch.num_tokens;
  a.pool_pages = pool.num_pages;
  a.rows_end_context = is_wgmma_kernel(plan.kernel) && batch.rows_end_context ? 1 : 0;

  plan.grid.q_tiles = int((rows + info.rows - 1) / info.rows);
  plan.grid.kv_heads = nkv;
  plan.grid.num_seqs = batch.num_seqs;

  // Splits follow the batch (its CTAs and longest context), so the batch-invariant policy never splits.
  int splits = 1;
  if (workspace != nullptr && !kernel_policy().batch_invariant) {
    const int64_t ctas = int64_t(plan.grid.q_tiles) * nkv * batch.num_seqs;
    const int per_sm = is_wgmma_kernel(plan.kernel) ? 1  // 193-225 KB of shared memory per CTA
                       : hd == 256                  ? tile_kernel_occupancy_hd256(plan.kernel)
                                                    : tile_kernel_occupancy_hd512(plan.kernel);
    const int64_t key_tiles = (visible_keys(batch, p) + info.keys - 1) / info.keys;
    // Past 32 splits the combine loads the partials in more than one round trip (32 splits a
    // batch): worth it only where 32 splits would keep more than 4 key tiles each (decision record
    // "Attention: split cap", docs/kernel-policy.md).
    const int64_t split_cap = key_tiles > 4 * kCombineBatchSplits ? kMaxSplits : kCombineBatchSplits;
    const int64_t max_splits = std::min<int64_t>(
        {max_splits_knob(), split_cap, key_tiles / min_tiles_per_split(narrow), kSplitCtaBudget / ctas});
    splits = choose_splits(ctas, int64_t(sm_count()) * per_sm, max_splits);
    while (splits > 1 && partial_bytes(splits, batch.num_tokens, p.num_q_heads, hd) > workspace_bytes) --splits;
  }
  a.num_splits = splits;
  if (splits > 1) {
    a.part_o = static_cast<float*>(workspace);
    a.part_ml = a.part_o + int64_t(splits) * batch.num_tokens * p.num_q_heads * hd;
  }
  return plan;
}

// Arrival counters of the fused split combine, then the persistent kernel's work queue (2 ints),
// one zeroed buffer per (device, stream), allocated on the first launch of that stream and kept
// for the process: kernels of one stream run in order, and each launch leaves its counters at
// zero, so the buffer never needs a memset again, also under graph replay. Null (the separate
// combine kernel runs, the persistent kernel's launcher falls back to the serial kernel) while the
// stream is being captured and has no buffer yet: allocating is not allowed then.
constexpr int kSplitCounters = 1024;
constexpr int kStreamCounters = kSplitCounters + 2;

static int* stream_counters(cudaStream_t stream) {
  // One lock and one map per device: a rank's thread never waits on another rank's lock (the
  // allocation is pool_malloc's, which waits for no device: device_allocator.h).
  constexpr int kMaxDevices = 64;
  static std::mutex mus[kMaxDevices];
  static std::map<cudaStream_t, int*> per_device[kMaxDevices];
  int dev = 0;
  GS_CUDA_CHECK(cudaGetDevice(&dev));
  GS_CHECK(dev >= 0 && dev < kMaxDevices, "attention: device {} beyond the {} the counters track", dev, kMaxDevices);
  std::lock_guard<std::mutex> lock(mus[dev]);
  auto& buffers = per_device[dev];
  const cudaStream_t key = stream;
  if (auto it = buffers.find(key); it != buffers.end()) return it->second;
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  GS_CUDA_CHECK(cudaStreamIsCapturing(stream, &capture));
  if (capture != cudaStreamCaptureStatusNone) return nullptr;
  int* p = nullptr;
  GS_CUDA_CHECK(pool_malloc(dev, kStreamCounters * sizeof(int), reinterpret_cast<void**>(&p)));
  GS_CUDA_CHECK(cudaMemsetAsync(p, 0, kStreamCounters * sizeof(int), stream));
  buffers.emplace(key, p);
  return p;
}

// Auto never fuses the combine: inside a replayed decode graph the combine kernel won (decision
// record "Attention: combine mode", docs/kernel-policy.md); Fused stays for A/B runs and is tested.
bool fuses_combine(const AttentionPlan& plan, CombineMode mode) {
  if (plan.empty || plan.args.num_splits <= 1 || is_wgmma_kernel(plan.kernel)) return false;
  if (int64_t(plan.grid.q_tiles) * plan.grid.kv_heads * plan.grid.num_seqs > kSplitCounters) return false;
  return mode == CombineMode::Fused;
}

void launch_plan(const AttentionPlan& plan, cudaStream_t stream, CombineMode mode) {
  if (plan.empty) return;
  if (mode == CombineMode::Auto) mode = kernel_policy().attention.combine;
  TileArgs a = plan.args;
  // The mma.sync tile and decode kernels can merge their splits themselves (the last split CTA
  // of a row tile); the wgmma kernels leave it to the combine kernel.
  if (fuses_combine(plan, mode)) a.split_counters = stream_counters(stream);
  if (plan.kernel == TileKernel::Hd256WgmmaPersistent || plan.kernel == TileKernel::Hd512WgmmaPairPersistent) {
    int* counters = stream_counters(stream);
    a.work_queue = counters ? counters + kSplitCounters : nullptr;
  }
  if (is_wgmma_kernel(plan.kernel)) launch_wgmma_kernel(plan.kernel, a, plan.grid, stream);
  else if (plan.head_dim == 256) launch_tile_kernel_hd256(plan.kernel, a, plan.grid, stream);
  else launch_tile_kernel_hd512(plan.kernel, a, plan.grid, stream);
  if (a.num_splits > 1 && !a.split_counters) launch_combine(plan.head_dim, a, stream);
}

}  // namespace attn

size_t attention_workspace_bytes(int max_tokens, int max_seqs, int num_q_heads, int head_dim) {
  (void)max_seqs;  // the CTA budget bounds the partials whatever the number of sequences
  const int64_t rows =
      std::min<int64_t>(int64_t(kSplitCtaBudget) * 64, int64_t(kMaxSplits) * max_tokens * num_q_heads);
  return size_t(rows) * (head_dim + 2) * 4;
}

void paged_attention(const Tensor& q, const AttentionBatch& batch, KvGroup group, const KvPool& pool, int cache_layer,
                     const AttentionParams& p, const Tensor& out, void* workspace, size_t workspace_bytes,
                     cudaStream_t stream) {
  attn::launch_plan(
      attn::plan_attention(q, batch, group, pool, cache_layer, p, out, workspace, workspace_bytes), stream);
}

}  // namespace gs::cuda
