// Named model shapes: the released Gemma-4 variants (gemma4-architecture.md §1.5, §1.6) and the
// tiny `demo` model the server runs out of the box. Each preset is the config.json a checkpoint of
// that shape would carry, so it goes through exactly the same parsing as a real download.
#pragma once
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "model/model_config.h"

namespace gs {

// demo, e2b, e4b, 26b-a4b, 31b, e2b-assistant, e4b-assistant, 26b-a4b-assistant, 31b-assistant.
const std::vector<std::string>& preset_names();
bool is_preset(const std::string& name);

// config.json of the preset (Gemma4ForConditionalGeneration / Gemma4AssistantForCausalLM form).
// Throws gs::Error listing the known names for an unknown one.
nlohmann::json preset_config_json(const std::string& name);
// generation_config.json of the preset (stop ids, sampling defaults of the instruction-tuned models).
nlohmann::json preset_generation_config_json(const std::string& name);
ModelConfig preset_config(const std::string& name);

// True for every preset but `demo`: writing one to disk takes tens of GB.
bool preset_is_real_size(const std::string& name);

// For an assistant preset, the target preset it drafts for ("e2b-assistant" -> "e2b"); "" otherwise.
std::string preset_target(const std::string& name);

// The demo tokenizer's facts the demo config depends on (vocab size, <eos> and <turn|> ids),
// learned once by writing the demo tokenizer to a scratch directory and reading it back.
struct DemoVocab {
  int vocab_size = 0;
  int eos_id = 1;
  int end_of_turn_id = -1;
  int bos_id = 2;
  int pad_id = 0;
};
const DemoVocab& demo_vocab();

}  // namespace gs
