// Checkpoint tensors (Hugging Face names, gemma4-architecture.md §6) -> ModelWeights on a backend.
// Every tensor's shape and dtype is checked against the config; projections that share an input
// are fused on the host (q|k|v, gate|up) before upload, so the model runs one GEMM for each.
#pragma once
#include <cstddef>
#include <functional>

#include "checkpoint/checkpoint.h"
#include "model/model_config.h"
#include "model/tensor_parallel.h"
#include "model/weights.h"
#include "ops/backend.h"

namespace gs {

// Called after each tensor with the bytes read so far and the total to read.
using LoadProgress = std::function<void(size_t done_bytes, size_t total_bytes)>;

// A plain progress bar on stderr; does nothing unless stderr is a terminal.
LoadProgress stderr_progress_bar(const std::string& label);

// Throws gs::Error naming the tensor and file for a missing, misshapen or wrongly typed tensor.
// K/V projections of KV-shared layers (and of assistant layers) are ignored. Without a progress
// callback, loads of more than 1 GB draw stderr_progress_bar. With a TpShard of size > 1 only
// that rank's slices are read and uploaded (tensor_parallel.h); `cfg` is the full model's config.
ModelWeights load_weights(const Checkpoint& ckpt, const ModelConfig& cfg, Backend& backend,
                          const LoadProgress& progress = nullptr, TpShard shard = {});

}  // namespace gs
