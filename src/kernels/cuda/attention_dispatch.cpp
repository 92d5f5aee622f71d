// paged_attention(): checks the call, plans the launch from the batch's host mirrors (no device
// synchronisation, so a step can be captured in a CUDA graph), and launches the tile kernel,
// followed by the combine kernel when the keys were split.
//
// One kernel family serves every shape; the plan picks its tile and its split:
// - prefill / extend (many rows per sequence): wide tiles of 64 packed rows;
// - decode and small verify steps (q_len·group <= 16): narrow tiles of 16 rows, so a decode row
//   block is one m16 tensor-core tile holding all query heads of a KV head;
// - whenever the grid would not fill the GPU (decode, verify, short prefills), the key range is
//   split (flash-decoding) until about two waves of CTAs exist, each split keeping at least two
//   key tiles, within the workspace the caller provides.
#include "kernels/cuda/attention.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "kernels/cuda/attention_params.cuh"
#include "kernels/cuda/cuda_check.h"

namespace gs::cuda {
namespace {

using attn::TileShape;

constexpr int kMaxSplits = 32;
// At most this many CTAs in a split launch. A CTA covers at most 64 packed rows, so the partials
// of a split launch never exceed kSplitCtaBudget · 64 rows (what attention_workspace_bytes sizes).
constexpr int kSplitCtaBudget = 512;
constexpr int kMinTilesPerSplit = 2;

size_t partial_bytes(int64_t splits, int64_t tokens, int64_t q_heads, int64_t head_dim) {
  return size_t(splits * tokens * q_heads * (head_dim + 2) * 4);
}

int sm_count() {
  int dev = 0, sms = 0;
  GS_CUDA_CHECK(cudaGetDevice(&dev));
  GS_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  return sms;
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
}

}  // namespace

size_t attention_workspace_bytes(int max_tokens, int max_seqs, int num_q_heads, int head_dim) {
  (void)max_seqs;  // the CTA budget bounds the partials whatever the number of sequences
  const int64_t rows =
      std::min<int64_t>(int64_t(kSplitCtaBudget) * 64, int64_t(kMaxSplits) * max_tokens * num_q_heads);
  return size_t(rows) * (head_dim + 2) * 4;
}

void paged_attention(const Tensor& q, const AttentionBatch& batch, KvGroup group, const KvPool& pool, int cache_layer,
                     const AttentionParams& p, const Tensor& out, void* workspace, size_t workspace_bytes,
                     cudaStream_t stream) {
  validate(q, batch, group, pool, cache_layer, p, out);
  if (batch.num_tokens == 0) return;

  const int hd = p.head_dim, nkv = p.num_kv_heads, grp = p.num_q_heads / p.num_kv_heads;
  const int64_t layer_elems = int64_t(pool.num_pages) * pool.page_size * nkv * hd;
  attn::TileArgs a;
  a.q = q.ptr<const __nv_bfloat16>();
  a.out = out.ptr<__nv_bfloat16>();
  a.k = pool.k.ptr<const __nv_bfloat16>() + cache_layer * layer_elems;
  a.v = pool.v.ptr<const __nv_bfloat16>() + cache_layer * layer_elems;
  a.positions = batch.positions.ptr<const int>();
  a.q_start = batch.q_start.ptr<const int>();
  a.kv_len = batch.kv_len.ptr<const int>();
  a.mm_block = p.mm_bidirectional ? batch.mm_block.ptr<const int>() : nullptr;
  a.page_table = batch.page_table[int(group)].ptr<const int>();
  a.max_pages = batch.max_pages[int(group)];
  a.page_size = pool.page_size;
  a.page_stride = int64_t(pool.page_size) * nkv * hd;
  a.token_stride = nkv * hd;
  a.num_q_heads = p.num_q_heads;
  a.group = grp;
  a.window = p.sliding_window;
  a.scale_log2 = p.scale * 1.4426950408889634f;
  a.num_tokens = batch.num_tokens;

  const TileShape shape = int64_t(batch.max_q_len) * grp <= attn::tile_rows(TileShape::Narrow) ? TileShape::Narrow
                                                                                                : TileShape::Wide;
  attn::TileGrid grid;
  grid.q_tiles = int((int64_t(batch.max_q_len) * grp + attn::tile_rows(shape) - 1) / attn::tile_rows(shape));
  grid.kv_heads = nkv;
  grid.num_seqs = batch.num_seqs;

  // Split the keys while the grid is under two waves.
  const int64_t ctas = int64_t(grid.q_tiles) * nkv * batch.num_seqs;
  const int per_sm = hd == 256 ? attn::tiles_per_sm_hd256(shape) : attn::tiles_per_sm_hd512(shape);
  const int64_t wanted = 2ll * sm_count() * per_sm;
  int splits = 1;
  if (ctas < wanted && workspace != nullptr) {
    const int64_t key_tiles = (batch.max_kv_len + attn::tile_keys(hd, shape) - 1) / attn::tile_keys(hd, shape);
    int64_t s = (wanted + ctas - 1) / ctas;
    s = std::min<int64_t>({s, kMaxSplits, key_tiles / kMinTilesPerSplit, kSplitCtaBudget / ctas});
    splits = int(std::max<int64_t>(s, 1));
    while (splits > 1 && partial_bytes(splits, batch.num_tokens, p.num_q_heads, hd) > workspace_bytes) --splits;
  }
  a.num_splits = splits;
  if (splits > 1) {
    a.part_o = static_cast<float*>(workspace);
    a.part_ml = a.part_o + int64_t(splits) * batch.num_tokens * p.num_q_heads * hd;
  }

  if (hd == 256) attn::launch_tiles_hd256(shape, a, grid, stream);
  else attn::launch_tiles_hd512(shape, a, grid, stream);
  if (splits > 1) attn::launch_combine(hd, a, stream);
}

}  // namespace gs::cuda
