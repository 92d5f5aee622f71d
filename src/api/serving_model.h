// Everything the API layer knows about the model it serves: its public name, tokenizer, chat
// template, generation_config.json defaults, and what it accepts as image input. Built once at
// start-up, shared read-only by all request threads.
#pragma once
#include <memory>
#include <optional>
#include <string>

#include "api/choice_decoder.h"
#include "api/multimodal_options.h"
#include "chat/chat_template.h"
#include "checkpoint/generation_config.h"
#include "tokenizer/tokenizer.h"

namespace gs::api {

struct ServingModel {
  std::string name;                                 // the "model" of responses and /v1/models
  std::shared_ptr<const Tokenizer> tokenizer;
  std::shared_ptr<const ChatTemplate> chat_template; // null: /v1/chat/completions is refused
  GenerationConfig generation;
  SpecialMarkers markers;
  MultimodalOptions multimodal;   // image input: off unless --enable-multimodal
  ImageTokenIds image_tokens;     // the tokenizer's <|image|>, <|image>, <image|>

  ServingModel(std::string name, std::shared_ptr<const Tokenizer> tok, std::shared_ptr<const ChatTemplate> tmpl,
               GenerationConfig gen)
      : name(std::move(name)), tokenizer(std::move(tok)), chat_template(std::move(tmpl)), generation(std::move(gen)),
        markers(SpecialMarkers::from(*tokenizer)),
        image_tokens(ImageTokenIds::from(*tokenizer)) {}
};

}  // namespace gs::api
