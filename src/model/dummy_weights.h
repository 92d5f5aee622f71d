// Random weights of a real model shape generated on the device, with no file (`--load-format
// dummy`): how performance is measured without downloading tens of GB. The big tensors are
// filled by Backend::fill_uniform (the counter-based generator every backend shares, so cpu and
// cuda build identical models); the small ones (norms, scalars, the centroid ordering) are drawn
// on the host from the same generator.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "model/model_config.h"
#include "model/weights.h"
#include "ops/backend.h"

namespace gs {

// Scales keep activations sane through any depth: projections uniform in ±1/sqrt(fan_in),
// embeddings so that the scaled embedding is of unit size, norm weights 1 ± 0.1, layer_scalar 1.
// vision: also the vision tower of the config's vision_config (multimodal serving).
ModelWeights make_dummy_weights(const ModelConfig& cfg, Backend& backend, uint64_t seed = 0, bool vision = false);

// The vision tower alone (bench-vision: no text weights loaded).
std::shared_ptr<const VisionWeights> make_dummy_vision_weights(const ModelConfig& cfg, Backend& backend,
                                                               uint64_t seed = 0);

// The shape behind `--model X --load-format dummy`: X is a directory holding a config.json (its
// weights are not read) or a preset name (see presets.h). Throws gs::Error saying which it is not.
ModelConfig resolve_dummy_config(const std::string& model);

}  // namespace gs
