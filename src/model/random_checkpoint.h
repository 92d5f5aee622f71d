// Writing checkpoint directories with random weights, laid out exactly like a Hugging Face
// download (config.json, generation_config.json, safetensors shards + index): the built-in demo
// model, `gemmaserve make-model`, and test fixtures. Norm weights and layer scalars are randomised
// (not left at 1) so that a loader or model mixing them up gives visibly wrong results.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "checkpoint/safetensors_writer.h"
#include "model/model_config.h"

namespace gs {

// How a tensor of the checkpoint is initialised.
enum class WeightInit {
  Uniform,      // ±scale
  NearOne,      // 1 ± [scale/4, scale] (norm weights, layer_scalar, router scales)
  Permutation,  // a permutation of [0, n) (the assistant's token ordering, i64)
  Constant,     // every value = scale (a clipped linear's bounds)
};

struct CheckpointTensor {
  TensorDecl decl;
  WeightInit init = WeightInit::Uniform;
  float scale = 0.f;
};

// Every text-model tensor a checkpoint of `cfg` holds, with HF names (prefix included), shapes
// and dtype `float_dtype`. KV-shared layers carry no k/v projections (as transformers saves them).
// A config with a vision_config also gets the vision tower and its projection.
std::vector<CheckpointTensor> checkpoint_tensors(const ModelConfig& cfg, DType float_dtype);

struct RandomCheckpointOptions {
  uint64_t seed = 0;
  DType dtype = DType::BF16;                      // BF16 or F32
  size_t max_shard_bytes = size_t(2) << 30;       // split into shards above this
};

// Writes config.json (`config` as given), generation_config.json (`generation`, unless null) and
// the random weights into `dir` (created if missing). Returns the parsed config.
ModelConfig write_random_checkpoint(const nlohmann::json& config, const nlohmann::json& generation,
                                    const std::string& dir, const RandomCheckpointOptions& opts);

// Writes `text` to `path`; throws gs::Error naming the path on failure.
void write_text_file(const std::string& path, const std::string& text);

}  // namespace gs
