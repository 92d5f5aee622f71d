#include "engine/engine_setup.h"

#include <algorithm>

#include "core/error.h"

namespace gs {

EngineSetup setup_engine(Gemma4Model& model, const EngineOptions& opts) {
  const ModelConfig& cfg = model.config();
  Backend& be = model.backend();
  GS_CHECK(opts.max_num_seqs >= 1, "--max-num-seqs must be at least 1, got {}", opts.max_num_seqs);
  GS_CHECK(opts.max_num_batched_tokens >= opts.max_num_seqs,
           "--max-num-batched-tokens ({}) must be at least --max-num-seqs ({}): every running request decodes one "
           "token per step",
           opts.max_num_batched_tokens, opts.max_num_seqs);
  GS_CHECK(opts.page_size >= 1 && opts.page_size <= 1024, "--page-size must be in [1, 1024], got {}", opts.page_size);
  GS_CHECK(opts.gpu_memory_utilization > 0 && opts.gpu_memory_utilization <= 1,
           "--gpu-memory-utilization must be in (0, 1], got {}", opts.gpu_memory_utilization);
  GS_CHECK(opts.max_queue >= 1, "--max-queue must be at least 1, got {}", opts.max_queue);
  GS_CHECK(opts.max_model_len >= 0, "--max-model-len must be positive, got {}", opts.max_model_len);
  GS_CHECK(opts.max_model_len <= cfg.max_position_embeddings,
           "--max-model-len {} exceeds the model's max_position_embeddings {}", opts.max_model_len,
           cfg.max_position_embeddings);

  GS_CHECK(!opts.enable_multimodal || model.vision_tower(),
           "--enable-multimodal: the model was loaded without a vision tower (it has no vision_config, or it was "
           "loaded text-only)");

  EngineSetup s;
  s.scheduler.max_num_seqs = opts.max_num_seqs;
  s.scheduler.max_num_batched_tokens = opts.max_num_batched_tokens;
  s.scheduler.max_logit_rows = opts.max_num_seqs + kPromptLogprobRowsPerStep;
  model.reserve(s.scheduler.max_num_batched_tokens, s.scheduler.max_logit_rows);

  MemoryPlanInput in;
  const size_t elem = dtype_size(be.kv_dtype());
  for (int g = 0; g < kNumKvGroups; ++g)
    in.kv_bytes_per_token[g] = cfg.num_cache_layers(KvGroup(g)) > 0 ? cfg.kv_bytes_per_token(KvGroup(g), elem) : 0;
  in.window = cfg.sliding_window;
  in.page_size = opts.page_size;
  in.max_model_len = opts.max_model_len > 0 ? opts.max_model_len : cfg.max_position_embeddings;
  in.max_model_len_explicit = opts.max_model_len > 0;
  in.max_num_seqs = opts.max_num_seqs;
  in.max_num_batched_tokens = opts.max_num_batched_tokens;
  in.swa_full_tokens_ratio = opts.swa_full_tokens_ratio;
  in.weights_bytes = model.weights().bytes();
  in.workspace_bytes = model.workspace_bytes();
  if (model.weights().vision) {
    in.vision_weights_bytes = model.weights().vision->bytes();
    in.vision_workspace_bytes = model.vision_workspace_bytes();
    in.vision_max_patches = model.vision_tower()->max_patches();
  }
  in.backend = be.name();
  if (opts.kv_cache_memory_bytes > 0) {
    in.kv_budget_bytes = opts.kv_cache_memory_bytes;
  } else if (be.device() == Device::CUDA) {
    // Weights and the workspace are already allocated: what the process may still take is the
    // utilisation cap minus everything in use on the device now (ours and anyone else's).
    const double total = double(be.total_memory_bytes()), used = total - double(be.free_memory_bytes());
    const double budget = opts.gpu_memory_utilization * total - used;
    GS_CHECK(budget > 0,
             "no device memory left for the KV cache: {:.2f} GiB of {:.2f} GiB are in use, above "
             "--gpu-memory-utilization {}",
             used / (1 << 30), total / (1 << 30), opts.gpu_memory_utilization);
    in.kv_budget_bytes = size_t(budget);
  } else {
    in.kv_budget_bytes = size_t(1) << 30;  // cpu: a fixed 1 GiB unless --kv-cache-memory-gib says otherwise
  }
  s.plan = plan_kv_memory(in);
  s.max_model_len = s.plan.max_model_len;
  return s;
}

}  // namespace gs
