#include "model/model_source.h"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "model/demo_model.h"
#include "model/dummy_weights.h"
#include "model/presets.h"
#include "model/weight_loader.h"

namespace gs {

namespace fs = std::filesystem;

namespace {

// generation_config.json defaults for a dummy-weight model: the preset's, or the directory's.
GenerationConfig dummy_generation_config(const std::string& model) {
  if (is_preset(model)) {
    return GenerationConfig::from_json(preset_generation_config_json(model), preset_config_json(model), "preset " + model);
  }
  fs::path gen = fs::path(model) / "generation_config.json";
  nlohmann::json g = fs::exists(gen) ? read_json_file(gen.string()) : nlohmann::json();
  return GenerationConfig::from_json(g, read_json_file((fs::path(model) / "config.json").string()), gen.string());
}

// The checkpoint directory whose weights `auto` reads.
std::string checkpoint_dir(const ModelSpec& spec) {
  if (spec.is_demo() || spec.model == "demo-assistant") return model_location(spec);
  GS_CHECK(!is_preset(spec.model) || fs::is_directory(spec.model),
           "--model {}: a preset has no weights on disk; add --load-format dummy for random weights", spec.model);
  return spec.model;
}

}  // namespace

std::string model_location(const ModelSpec& spec) {
  if (spec.is_demo()) return ensure_demo_checkpoint();
  if (spec.model == "demo-assistant") return ensure_demo_checkpoint("", "demo-assistant");
  return spec.model;
}

LoadFormat parse_load_format(const std::string& s) {
  if (s == "auto") return LoadFormat::Auto;
  if (s == "dummy") return LoadFormat::Dummy;
  throw Error("--load-format '{}' is not one of auto, dummy", s);
}

ModelConfig resolve_model_config(const ModelSpec& spec, std::string* dir) {
  if (spec.format == LoadFormat::Dummy) {
    if (dir) *dir = is_preset(spec.label()) ? "" : spec.label();
    return resolve_dummy_config(spec.label());
  }
  std::string d = checkpoint_dir(spec);
  if (dir) *dir = d;
  return resolve_dummy_config(d);  // a directory: its config.json
}

GenerationConfig dummy_model_generation_config(const ModelSpec& spec) { return dummy_generation_config(spec.label()); }

LoadedModel load_model(const ModelSpec& spec, Backend& backend) {
  LoadedModel m;
  if (spec.format == LoadFormat::Dummy) {
    m.config = resolve_model_config(spec, &m.dir);
    GS_CHECK(!spec.enable_multimodal || m.config.has_vision(),
             "--enable-multimodal: {} has no vision tower (no vision_config)", spec.label());
    m.weights = make_dummy_weights(m.config, backend, spec.dummy_seed, spec.enable_multimodal);
    m.generation = dummy_generation_config(spec.label());
    return m;
  }
  m.dir = checkpoint_dir(spec);
  auto ckpt = Checkpoint::open(m.dir, CheckpointOptions{spec.enable_multimodal});
  m.config = ModelConfig::from_json(ckpt->config_json());
  GS_CHECK(!spec.enable_multimodal || m.config.has_vision(),
           "--enable-multimodal: {} has no vision tower (its config.json has no vision_config)", m.dir);
  m.weights = load_weights(*ckpt, m.config, backend);
  m.generation = ckpt->generation_config();
  return m;
}

}  // namespace gs
