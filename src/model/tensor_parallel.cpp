#include "model/tensor_parallel.h"

#include "core/error.h"

namespace gs {

namespace {
void check_divides(int size, long long n, const char* what) {
  GS_CHECK(n % size == 0, "--tensor-parallel-size {}: {} ({}) is not a multiple of it", size, what, n);
}
}  // namespace

void check_tensor_parallel(const ModelConfig& cfg, int size) {
  GS_CHECK(size >= 1, "--tensor-parallel-size must be at least 1 (got {})", size);
  if (size == 1) return;
  GS_CHECK(!cfg.is_assistant, "tensor parallelism runs a decoder, not the MTP assistant {}", cfg.architecture);
  check_divides(size, cfg.num_q_heads, "num_attention_heads");
  for (int i = 0; i < cfg.num_layers; ++i) {
    const LayerSpec& l = cfg.layers[size_t(i)];
    if (l.num_kv_heads >= size) check_divides(size, l.num_kv_heads, "the KV heads of a layer");
    else
      GS_CHECK(size % l.num_kv_heads == 0, "--tensor-parallel-size {}: layer {} has {} KV heads, which do not divide it",
               size, i, l.num_kv_heads);
    check_divides(size, l.intermediate, "the MLP width (intermediate_size)");
  }
  if (cfg.moe) check_divides(size, cfg.moe_intermediate_size, "moe_intermediate_size");
}

int64_t vocab_shard_rows(const ModelConfig& full, int size) {
  return (int64_t(full.vocab_size) + size - 1) / size;
}

ModelConfig shard_config(const ModelConfig& full, int size) {
  check_tensor_parallel(full, size);
  ModelConfig c = full;
  if (size == 1) return c;
  auto kv_share = [&](int heads) { return heads >= size ? heads / size : 1; };
  c.num_q_heads = full.num_q_heads / size;
  c.num_kv_heads = kv_share(full.num_kv_heads);
  if (full.num_global_kv_heads) c.num_global_kv_heads = kv_share(full.num_global_kv_heads);
  c.intermediate_size = full.intermediate_size / size;
  c.moe_intermediate_size = full.moe_intermediate_size / size;
  for (LayerSpec& l : c.layers) {
    l.num_kv_heads = kv_share(l.num_kv_heads);
    l.intermediate /= size;
  }
  return c;
}

int first_kv_head(const ModelConfig& full, int layer, TpShard shard) {
  const int nkv = full.layers[size_t(layer)].num_kv_heads;
  if (nkv >= shard.size) return shard.rank * (nkv / shard.size);
  // Fewer KV heads than ranks: the KV head that this rank's q heads (a contiguous block of
  // Nq/size) belong to; each KV head serves Nq/nkv q heads.
  const int q_first = shard.rank * (full.num_q_heads / shard.size);
  return q_first / (full.num_q_heads / nkv);
}

}  // namespace gs
