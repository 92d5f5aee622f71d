// What the op interface needs to know about a model's KV cache, as plain numbers: the two pools
// (sliding-window and full-attention layers) and, per pool, how many layers own a cache and the
// shape of one token's K (and V) in each. The model derives it from its config
// (ModelConfig::kv_layout); backends allocate from it without knowing the model.
#pragma once

namespace gs {

enum class KvGroup { Sliding = 0, Full = 1 };  // the two KV pools
constexpr int kNumKvGroups = 2;

struct KvGroupShape {
  int cache_layers = 0;  // layers of the group that own a cache (KV-shared and assistant layers own none)
  int kv_heads = 0;
  int head_dim = 0;
};

struct KvLayout {
  KvGroupShape groups[kNumKvGroups];
  const KvGroupShape& group(KvGroup g) const { return groups[int(g)]; }
};

}  // namespace gs
