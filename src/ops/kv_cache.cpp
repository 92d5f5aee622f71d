#include "ops/kv_cache.h"

namespace gs {
size_t KvPool::page_bytes() const {
  return 2ull * size_t(cache_layers) * page_size * kv_heads * head_dim * dtype_size(k.dtype);
}
}  // namespace gs
