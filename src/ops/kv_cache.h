// Device memory of the paged KV cache: one pool per KV group (sliding, full). Page bookkeeping
// (who owns which page) lives in engine/; this is only the storage the kernels read and write.
//
// Layout of each pool's K and V: [cache_layers, num_pages, page_size, kv_heads, head_dim],
// dtype = the backend's KV dtype. A token at position p of a sequence lives in page
// page_table[p / page_size], slot p % page_size. Sliding pages whose tokens all fell out of
// the window are returned to the pool while the request runs: their page-table entries are
// -1 and kernels never read them.
#pragma once
#include "core/tensor.h"
#include "ops/kv_layout.h"

namespace gs {

struct KvPool {
  Tensor k, v;
  int cache_layers = 0;
  int num_pages = 0;
  int page_size = 0;
  int kv_heads = 0;
  int head_dim = 0;
  size_t page_bytes() const;  // K+V bytes of one page across all cache layers
};

struct KvCache {
  KvPool pools[kNumKvGroups];
  KvPool& pool(KvGroup g) { return pools[int(g)]; }
  const KvPool& pool(KvGroup g) const { return pools[int(g)]; }
};

}  // namespace gs
