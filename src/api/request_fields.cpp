#include "api/request_fields.h"

#include <array>
#include <mutex>
#include <set>
#include <string_view>

#include "api/json_fields.h"
#include "core/log.h"

namespace gs::api {

namespace {

// Fields of both endpoints: OpenAI's, then vLLM's extra sampling and request parameters.
constexpr std::array kCommonFields = {
    // OpenAI
    "model", "frequency_penalty", "presence_penalty", "logit_bias", "logprobs", "max_tokens", "max_completion_tokens",
    "n", "seed", "stop", "stream", "stream_options", "temperature", "top_p", "user", "best_of", "echo", "suffix",
    "response_format",
    // vLLM sampling parameters
    "top_k", "min_p", "repetition_penalty", "min_tokens", "stop_token_ids", "include_stop_str_in_output",
    "ignore_eos", "skip_special_tokens", "spaces_between_special_tokens", "use_beam_search", "length_penalty",
    "truncate_prompt_tokens", "prompt_logprobs", "allowed_token_ids", "bad_words", "logits_processors",
    // vLLM request parameters
    "add_special_tokens", "guided_json", "guided_regex", "guided_choice", "guided_grammar", "guided_decoding_backend",
    "guided_whitespace_pattern", "structural_tag", "structured_outputs", "priority", "request_id", "cache_salt",
    "return_tokens_as_token_ids", "return_token_ids", "kv_transfer_params", "vllm_xargs", "prompt_embeds",
};

constexpr std::array kChatFields = {
    // OpenAI
    "messages", "audio", "function_call", "functions", "metadata", "modalities",
    "parallel_tool_calls", "prediction", "prompt_cache_key", "prompt_cache_retention", "reasoning_effort",
    "safety_identifier", "service_tier", "store", "tool_choice", "tools", "top_logprobs", "verbosity",
    "web_search_options",
    // vLLM
    "chat_template", "chat_template_kwargs", "add_generation_prompt", "continue_final_message", "documents",
    "mm_processor_kwargs",
};

constexpr std::array kCompletionFields = {"prompt"};

template <size_t N>
bool in(const std::array<const char*, N>& names, std::string_view name) {
  for (const char* n : names)
    if (name == n) return true;
  return false;
}

}  // namespace

bool is_known_field(const std::string& name, Endpoint endpoint) {
  return in(kCommonFields, name) ||
         (endpoint == Endpoint::ChatCompletions ? in(kChatFields, name) : in(kCompletionFields, name));
}

void check_no_effect_fields(const FieldReader& f, Endpoint endpoint) {
  // Who sent the request, for the client's own bookkeeping.
  f.string("user");
  f.integer("priority", INT32_MIN, INT32_MAX);  // scheduling order, never the tokens
  f.string("request_id");
  // The tokenizer's decoder joins pieces as they are, as vLLM's fast-tokenizer path does.
  f.boolean("spaces_between_special_tokens");
  if (endpoint != Endpoint::ChatCompletions) return;
  f.object("metadata");
  f.boolean("store");
  f.string("service_tier");
  f.boolean("parallel_tool_calls");
  f.string("prompt_cache_key");
  f.string("prompt_cache_retention");
  f.string("safety_identifier");
  f.object("prediction");  // predicted outputs only speed up OpenAI's decoding; the text is the same
}

std::vector<std::string> note_unknown_fields(const RequestJson& body, Endpoint endpoint) {
  static std::mutex mu;
  static std::set<std::string, std::less<>> logged;
  std::vector<std::string> now;
  for (auto it = body.begin(); it != body.end(); ++it) {
    if (is_known_field(it.key(), endpoint)) continue;
    std::lock_guard<std::mutex> lock(mu);
    // Bounded: a client sending random names must not grow the set without end.
    if (logged.size() >= 1024 || !logged.insert(it.key()).second) continue;
    log::warn("request field {} is not known to this server; it is ignored (logged once per field name)",
              brief(RequestJson(it.key())));
    now.push_back(it.key());
  }
  return now;
}

}  // namespace gs::api
