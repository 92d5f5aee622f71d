// The built-in demo model: a tiny Gemma-4 (the `demo` preset) with random weights, its own small
// tokenizer and chat template, created on first use so `gemmaserve serve` works with no download.
// Also writes any preset as a checkpoint directory (`gemmaserve make-model`).
#pragma once
#include <string>

#include "model/model_config.h"
#include "model/random_checkpoint.h"

namespace gs {

// A preset (presets.h) as a checkpoint directory. The demo preset also gets its tokenizer
// (tokenizer.json, tokenizer_config.json) and chat_template.jinja.
ModelConfig write_preset_checkpoint(const std::string& preset, const std::string& dir,
                                    const RandomCheckpointOptions& opts);

// Where the built-in demo model lives: $GEMMASERVE_HOME/demo, else ~/.cache/gemmaserve/demo.
std::string default_demo_dir();
// Creates the demo checkpoint in default_demo_dir() (or `dir`) unless it is already complete and
// current; returns its directory. Safe against concurrent callers: the files are written to a
// scratch directory and renamed into place.
std::string ensure_demo_checkpoint(const std::string& dir = "");

// `--model` of the commands that read a checkpoint (run, serve, inspect): none, or "demo", names
// the built-in demo model.
bool names_demo_model(const std::string& model);
// The directory that `--model` names when weights are read from disk: the demo checkpoint
// (created on first use) for the demo model, else `model` as given.
std::string checkpoint_dir_or_demo(const std::string& model);

}  // namespace gs
