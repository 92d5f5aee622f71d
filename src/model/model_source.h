// What `--model` and `--load-format` mean, decided once for every command (serve, run, logits,
// bench-decode, inspect):
//   (empty) or demo   the built-in demo model: its checkpoint, written on first use
//   demo-assistant    the demo's MTP drafter (--speculative-model), written on first use too
//   a preset name     dummy weights of that shape (presets.h); needs --load-format dummy
//   a directory       a Hugging Face checkpoint: its weights (auto) or dummy weights of its config
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "checkpoint/checkpoint.h"
#include "checkpoint/generation_config.h"
#include "model/model_config.h"
#include "model/weights.h"
#include "ops/backend.h"

namespace gs {

enum class LoadFormat { Auto, Dummy };
// "auto" or "dummy"; anything else is a gs::Error naming --load-format.
LoadFormat parse_load_format(const std::string& s);

struct ModelSpec {
  std::string model;              // as given: empty, demo, a preset or a directory
  LoadFormat format = LoadFormat::Auto;
  uint64_t dummy_seed = 0;        // the generator of dummy weights
  bool enable_multimodal = false; // also load (or make) the vision tower, when the model has one

  bool is_demo() const { return model.empty() || model == "demo"; }
  // "demo", the preset, or the directory as given.
  std::string label() const { return is_demo() ? "demo" : model; }
};

struct LoadedModel {
  ModelConfig config;
  ModelWeights weights;
  GenerationConfig generation;
  std::string dir;                // the checkpoint directory, when there is one (tokenizer, template)
};

// The demo's checkpoint directory (written if needed) for the demo, else the argument as given (a
// preset name or a directory).
std::string model_location(const ModelSpec& spec);
// The model's structure without its weights; `dir` receives the checkpoint directory when the
// spec names one whose weights would be read (the demo's is created if needed). Throws gs::Error.
ModelConfig resolve_model_config(const ModelSpec& spec, std::string* dir = nullptr);
// The model ready on `backend`: weights read or made, generation defaults, its directory.
LoadedModel load_model(const ModelSpec& spec, Backend& backend);
// The generation defaults load_model gives a --load-format dummy model (tensor-parallel ranks load
// their weights themselves).
GenerationConfig dummy_model_generation_config(const ModelSpec& spec);

}  // namespace gs
