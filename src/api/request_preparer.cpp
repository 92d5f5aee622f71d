#include "api/request_preparer.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <random>

#include <fmt/format.h>

#include "api/api_error.h"
#include "api/json_fields.h"
#include "api/request_problem_error.h"

namespace gs::api {

std::string new_request_id(const char* prefix) {
  static std::atomic<uint64_t> counter{0};
  static const uint64_t salt = std::random_device{}() * 0x9E3779B97F4A7C15ull ^ std::random_device{}();
  uint64_t x = salt + 0x9E3779B97F4A7C15ull * ++counter;
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  return fmt::format("{}{:016x}", prefix, x);
}

std::string render_chat_prompt(const OpenAIRequest& req, const ServingModel& model, bool add_generation_prompt) {
  if (!model.chat_template) {
    throw invalid_request(fmt::format("model {} has no chat template; use /v1/completions", model.name), "messages");
  }
  // Only the template's own switches (enable_thinking, ...) may come from the client: a kwarg named
  // like one of the renderer's inputs or Jinja's globals would replace what the server validated.
  for (auto it = req.chat_template_kwargs.begin(); it != req.chat_template_kwargs.end(); ++it) {
    std::string why = ChatTemplate::reserved_variable_reason(it.key());
    if (!why.empty()) {
      throw invalid_request(fmt::format("chat_template_kwargs: '{}' cannot be set here: {}", it.key(), why),
                            "chat_template_kwargs");
    }
  }
  RequestJson extra = req.chat_template_kwargs;
  extra["enable_thinking"] = req.enable_thinking;
  try {
    return model.chat_template->render(req.messages, req.tools, add_generation_prompt, extra);
  } catch (const Error& e) {
    throw invalid_request(fmt::format("chat template could not render these messages: {}", e.what()), "messages");
  }
}

ChatPrompt tokenize_chat_prompt(const OpenAIRequest& req, const ServingModel& model, bool add_generation_prompt) {
  ChatPrompt p;
  // Images first: a request refused for its images is refused before the template runs.
  p.images = load_images(req, model.multimodal);
  if (!p.images.empty() && !model.image_tokens.complete()) {
    throw invalid_request(fmt::format("messages: the tokenizer of {} has no image tokens (<|image|>, <|image>, "
                                      "<image|>)", model.name), "messages");
  }
  p.text = render_chat_prompt(req, model, add_generation_prompt);
  // The template writes <bos> itself: no second one from the tokenizer unless asked (vLLM's
  // add_special_tokens).
  std::vector<int> ids = model.tokenizer->encode(p.text, req.add_special_tokens.value_or(false));
  if (p.images.empty()) {
    p.tokens.ids = std::move(ids);  // a text prompt's placeholder text stays what it is, as before images
  } else {
    p.tokens = expand_image_placeholders(ids, p.images, model.image_tokens);
  }
  return p;
}

namespace {

SamplingParams sampling_for(const OpenAIRequest& r, const GenerationConfig& g, int max_tokens) {
  SamplingParams s;
  // Unset fields take the checkpoint's generation_config.json; without do_sample it is greedy.
  s.temperature = to_float(r.temperature.value_or(g.do_sample ? g.temperature : 0.0));
  s.top_k = r.top_k.value_or(g.do_sample ? g.top_k : 0);
  s.top_p = to_float(r.top_p.value_or(g.do_sample ? g.top_p : 1.0));
  s.min_p = to_float(r.min_p.value_or(g.do_sample ? g.min_p : 0.0));
  s.seed = r.seed;
  s.presence_penalty = to_float(r.presence_penalty);
  s.frequency_penalty = to_float(r.frequency_penalty);
  s.repetition_penalty = to_float(r.repetition_penalty);
  s.logit_bias = r.logit_bias;
  s.max_tokens = max_tokens;
  s.min_tokens = r.min_tokens;
  s.ignore_eos = r.ignore_eos;
  s.stop_token_ids = r.stop_token_ids;
  if (!r.ignore_eos) {
    // generation_config's eos list can be longer than config.json's (e.g. <|tool_response>).
    for (int id : g.eos_token_ids) s.stop_token_ids.push_back(id);
  }
  s.logprobs = r.logprobs;
  s.prompt_logprobs = r.endpoint == Endpoint::Completions && r.echo && r.logprobs >= 0;
  return s;
}

}  // namespace

PreparedRequest prepare_request(OpenAIRequest req, const ServingModel& model, const RequestLimits& engine_limits) {
  if (!req.model.empty() && req.model != model.name) {
    throw ApiError(404, fmt::format("The model `{}` does not exist; this server serves `{}`", req.model, model.name),
                   "not_found_error", "model", "model_not_found");
  }
  const Tokenizer& tok = *model.tokenizer;
  // Ids the engine could run but the tokenizer cannot name are refused too: the response carries text.
  RequestLimits limits = engine_limits;
  limits.vocab_size = std::min(limits.vocab_size, tok.vocab_size());
  if (req.reasoning_effort && req.endpoint == Endpoint::ChatCompletions && model.chat_template &&
      model.chat_template->source().find("enable_thinking") == std::string::npos) {
    // A template without the switch would render the same prompt whatever the effort.
    throw unsupported(fmt::format("reasoning_effort: the chat template of {} has no thinking switch "
                                  "(enable_thinking)", model.name), "reasoning_effort");
  }
  PreparedRequest p;
  bool chat = req.endpoint == Endpoint::ChatCompletions;
  p.id = new_request_id(chat ? "chatcmpl-" : "cmpl-");
  p.created = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();

  ChatPrompt chat_prompt;
  if (chat) {
    chat_prompt = tokenize_chat_prompt(req, model);
    p.prompt_ids.push_back(chat_prompt.tokens.ids);
    p.prompt_texts.push_back(chat_prompt.text);
  } else {
    const bool add_bos = req.add_special_tokens.value_or(tok.add_bos_default());
    for (const PromptInput& in : req.prompts) {
      p.prompt_ids.push_back(in.is_ids ? in.ids : tok.encode(in.text, add_bos));
      p.prompt_texts.push_back(in.text);  // an id prompt's text once its ids are known to be valid
    }
  }

  for (size_t pi = 0; pi < p.prompt_ids.size(); ++pi) {
    // Unset, max_tokens is what the model length leaves after the prompt.
    const int max_tokens = req.max_tokens.value_or(limits.max_model_len - static_cast<int>(p.prompt_ids[pi].size()));
    for (int k = 0; k < req.n; ++k) {
      PreparedChoice c;
      c.prompt_index = static_cast<int>(pi);
      c.index = static_cast<int>(pi) * req.n + k;
      c.request.id = fmt::format("{}-{}", p.id, c.index);
      c.request.prompt = p.prompt_ids[pi];
      if (chat) {
        c.request.mm_block = chat_prompt.tokens.mm_block;
        c.request.images = chat_prompt.images;
      }
      c.request.sampling = sampling_for(req, model.generation, max_tokens);
      // n seeded choices must differ from each other and still reproduce: seed + choice number.
      if (c.request.sampling.seed) *c.request.sampling.seed += static_cast<uint64_t>(k);
      p.choices.push_back(std::move(c));
    }
  }
  // Every choice, before the session submits any: a request is refused whole, never half run.
  for (const PreparedChoice& c : p.choices) {
    if (auto problem = validate_request(c.request, limits)) throw request_problem_error(*problem, req, c.prompt_index);
  }
  if (!chat) {
    for (size_t i = 0; i < req.prompts.size(); ++i)
      if (req.prompts[i].is_ids) p.prompt_texts[i] = tok.decode(req.prompts[i].ids, /*skip_special=*/false);
  }
  p.api = std::move(req);
  return p;
}

}  // namespace gs::api
