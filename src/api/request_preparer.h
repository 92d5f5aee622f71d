// From a parsed OpenAI request to what the engine runs: the prompt rendered with the model's chat
// template and tokenized, and one GenerationRequest per choice with sampling filled in from
// generation_config.json defaults, each checked by the engine's request validation
// (engine/request_validation.h: ranges, token ids, the prompt against the model length, never
// truncated) before any is submitted.
#pragma once
#include <string>
#include <vector>

#include "api/image_inputs.h"
#include "api/openai_request.h"
#include "api/serving_model.h"
#include "engine/request.h"
#include "engine/request_validation.h"

namespace gs::api {

struct PreparedChoice {
  int index = 0;          // OpenAI choice index: prompt_index * n + k
  int prompt_index = 0;
  GenerationRequest request;
};

struct PreparedRequest {
  OpenAIRequest api;
  std::string id;         // "chatcmpl-..." / "cmpl-..."
  int64_t created = 0;    // unix seconds
  std::vector<std::vector<int>> prompt_ids;   // one per prompt
  std::vector<std::string> prompt_texts;      // for echo (completions) and debugging
  std::vector<PreparedChoice> choices;
};

// Throws ApiError (400) for anything the request cannot be served with. `limits` are the engine's
// (EngineClient::limits()); token ids are also held to the tokenizer's vocabulary.
PreparedRequest prepare_request(OpenAIRequest req, const ServingModel& model, const RequestLimits& limits);

// Shared by prepare_request and /tokenize: the token ids of a chat request's prompt with its images
// loaded and their placeholders expanded (ApiError 400 for an image that cannot be used).
struct ChatPrompt {
  std::string text;
  ExpandedPrompt tokens;
  std::vector<PreparedImagePtr> images;
};
ChatPrompt tokenize_chat_prompt(const OpenAIRequest& req, const ServingModel& model, bool add_generation_prompt = true);

// Shared by prepare_request and /tokenize: the prompt text of a chat request.
std::string render_chat_prompt(const OpenAIRequest& req, const ServingModel& model, bool add_generation_prompt = true);

// A fresh id with the given prefix ("chatcmpl-3f9c...").
std::string new_request_id(const char* prefix);

}  // namespace gs::api
