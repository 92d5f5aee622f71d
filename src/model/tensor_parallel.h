// What one rank of a tensor-parallel group holds (docs/scale-out.md). A rank is an ordinary
// Gemma4Model whose config has the shard's shapes (shard_config) and whose weights are its slices
// (load_weights with a TpShard):
//   - attention: q heads split evenly; KV heads split evenly, or, where a layer has fewer KV heads
//     than ranks, each rank keeps the one KV head its q heads read (replicated);
//     q|k|v column-parallel, o_proj row-parallel (all-reduce of its output);
//   - MLP: gate|up column-parallel, down row-parallel (all-reduce);
//   - MoE: the router replicated; every expert's intermediate width split over the ranks (each rank
//     computes a slice of every expert, so the load is even whatever the routing), the experts'
//     combine reduced before its norm;
//   - embedding and tied LM head vocabulary-parallel: rank r holds rows [r·Vs, (r+1)·Vs) with
//     Vs = ceil(V / ranks), the last shards padded with zero rows when ranks do not divide V (as
//     vLLM pads); the lookup of ids outside a rank's rows gives zeros and an all-reduce fills them
//     in; the head's logits (soft-capped per shard, which is elementwise) are gathered into full
//     rows of V, the padding columns dropped;
//   - PLE tables and projections (E2B/E4B), norms and layer scalars replicated.
#pragma once
#include <string>

#include "model/model_config.h"

namespace gs {

class Communicator;

struct TpShard {
  int rank = 0;
  int size = 1;
  bool active() const { return size > 1; }
};

// Throws gs::Error naming the dimension when `cfg` cannot be split over `size` ranks.
void check_tensor_parallel(const ModelConfig& cfg, int size);

// The config of one rank: head counts and widths of its shard. vocab_size stays the full
// vocabulary (the model's logits rows are gathered to full width).
ModelConfig shard_config(const ModelConfig& full, int size);

// Rows of the embedding / LM head each rank holds: ceil(vocab_size / size).
int64_t vocab_shard_rows(const ModelConfig& full, int size);

// The first KV head of layer `layer` that rank `rank` holds (its count: shard_config's layer spec).
int first_kv_head(const ModelConfig& full, int layer, TpShard shard);

}  // namespace gs
