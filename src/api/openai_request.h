// The body of a /v1/chat/completions or /v1/completions request, parsed: JSON types and shapes
// are checked here, value ranges are not. Nothing here knows the model or the engine: the ranges,
// token ids and lengths are checked by the engine's one request validation
// (engine/request_validation.h) when the request is prepared (api/request_preparer.h). Every known
// field is honoured, refused with a 400 naming it, or accepted because it cannot change the output
// (docs/api-fields.md; api/request_fields.h). Unknown fields are accepted and logged once per name,
// as vLLM does; known fields of the wrong type are refused with a 400 naming the field.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gs::api {

enum class Endpoint { ChatCompletions, Completions };

// Request bodies keep the client's key order. Chat templates print objects with `tojson` and walk
// tool parameters in order; Python's jinja2 sees dicts in insertion order, so to render what
// transformers renders, nothing between the HTTP body and the template may sort keys (as
// nlohmann::json does).
using RequestJson = nlohmann::ordered_json;

// One prompt of /v1/completions: text, or token ids given by the client.
struct PromptInput {
  std::string text;
  std::vector<int> ids;
  bool is_ids = false;
};

// One image content part of a chat message ({"type": "image_url", "image_url": {"url", "detail"}}),
// in prompt order. The chat template sees {"type": "image"} in its place.
struct ImagePart {
  std::string url;
  std::optional<int> budget;  // from detail: "low" 70, "high" 1120; unset ("auto"): the request's or server's default
  std::string where;          // "messages[1].content[2]", for error messages
};

struct OpenAIRequest {
  Endpoint endpoint = Endpoint::ChatCompletions;
  std::string model;  // empty when not given

  // /v1/chat/completions: messages with content flattened to a string (text parts joined by
  // "\n") and tool-call arguments parsed into JSON objects, ready for the chat template.
  RequestJson messages = RequestJson::array();
  RequestJson tools;                     // null, or the array of {type:"function", function:{...}}
  RequestJson chat_template_kwargs = RequestJson::object();
  bool enable_thinking = false;          // chat_template_kwargs.enable_thinking, or reasoning_effort
  std::vector<ImagePart> images;          // image parts of the messages, in order
  std::optional<int> max_soft_tokens;     // mm_processor_kwargs.max_soft_tokens: the images' default budget
  // reasoning_effort as given ("none", "low", "medium", "high"): the template must have a thinking
  // switch for it to act on, which only the preparer can tell.
  std::optional<std::string> reasoning_effort;

  // /v1/completions
  std::vector<PromptInput> prompts;
  bool echo = false;

  // Sampling; unset values take generation_config.json defaults.
  std::optional<int> max_tokens;
  std::string max_tokens_param = "max_tokens";  // the field it came in ("max_completion_tokens", ...)
  std::optional<double> temperature, top_p, min_p;
  std::optional<int> top_k;              // 0: off (-1 is accepted as off, as vLLM does)
  std::optional<uint64_t> seed;
  double presence_penalty = 0, frequency_penalty = 0;
  double repetition_penalty = 1;
  std::vector<std::pair<int, float>> logit_bias;  // token id -> bias; ids distinct
  int min_tokens = 0;
  std::vector<std::string> stop;
  bool include_stop_str_in_output = false;
  std::vector<int> stop_token_ids;
  bool ignore_eos = false;
  bool skip_special_tokens = true;
  std::optional<bool> add_special_tokens;  // unset: chat false (the template writes <bos>), else the tokenizer's
  int n = 1;
  // -1: no logprobs; otherwise logprobs of the chosen token plus this many alternatives
  // (chat: logprobs=true with top_logprobs; completions: logprobs=N).
  int logprobs = -1;

  bool stream = false;
  bool include_usage = false;            // stream_options.include_usage
};

// Limits of the request's shape (what the engine never sees); the sampling ranges are
// engine/request_validation.h's.
constexpr int kMaxChoices = 64;          // n, and prompts x n
constexpr int kMaxStopStrings = 16;

OpenAIRequest parse_chat_request(const RequestJson& body);
OpenAIRequest parse_completion_request(const RequestJson& body);
// Parses the raw HTTP body (malformed JSON is a 400 with the parser's position).
RequestJson parse_json_body(const std::string& body);

}  // namespace gs::api
