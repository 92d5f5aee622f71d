// The built-in demo model: a tiny Gemma-4 (the `demo` preset) with random weights, its own small
// tokenizer and chat template, created on first use so `gemmaserve serve` works with no download;
// and its MTP drafter (`demo-assistant`), for speculative decoding with no download either.
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

// Where a built-in demo model lives: $GEMMASERVE_HOME/<preset>, else ~/.cache/gemmaserve/<preset>.
std::string default_demo_dir(const std::string& preset = "demo");
// Creates the checkpoint of `preset` ("demo", or "demo-assistant": an MTP drafter for it) in
// default_demo_dir() (or `dir`) unless it is already complete and current; returns its directory.
// Safe against concurrent callers: the files are written to a scratch directory and renamed into
// place.
std::string ensure_demo_checkpoint(const std::string& dir = "", const std::string& preset = "demo");

}  // namespace gs
