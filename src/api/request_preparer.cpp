#include "api/request_preparer.h"

#include <atomic>
#include <chrono>
#include <random>

#include <fmt/format.h>

#include "api/api_error.h"

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

namespace {

SamplingParams sampling_for(const OpenAIRequest& r, const GenerationConfig& g, int max_tokens) {
  SamplingParams s;
  // Unset fields take the checkpoint's generation_config.json; without do_sample it is greedy.
  s.temperature = static_cast<float>(r.temperature.value_or(g.do_sample ? g.temperature : 0.0));
  s.top_k = r.top_k.value_or(g.do_sample ? g.top_k : 0);
  s.top_p = static_cast<float>(r.top_p.value_or(g.do_sample ? g.top_p : 1.0));
  s.min_p = static_cast<float>(r.min_p.value_or(g.do_sample ? g.min_p : 0.0));
  s.seed = r.seed;
  s.presence_penalty = static_cast<float>(r.presence_penalty);
  s.frequency_penalty = static_cast<float>(r.frequency_penalty);
  s.repetition_penalty = static_cast<float>(r.repetition_penalty);
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

void check_ids(const std::vector<int>& ids, int vocab, const std::string& param) {
  for (int id : ids) {
    if (id < 0 || id >= vocab) {
      throw invalid_request(fmt::format("{}: token id {} is outside the vocabulary [0, {})", param, id, vocab), param);
    }
  }
}

}  // namespace

PreparedRequest prepare_request(OpenAIRequest req, const ServingModel& model, int max_model_len) {
  if (!req.model.empty() && req.model != model.name) {
    throw ApiError(404, fmt::format("The model `{}` does not exist; this server serves `{}`", req.model, model.name),
                   "not_found_error", "model", "model_not_found");
  }
  const Tokenizer& tok = *model.tokenizer;
  check_ids(req.stop_token_ids, tok.vocab_size(), "stop_token_ids");
  for (auto [id, bias] : req.logit_bias) check_ids({id}, tok.vocab_size(), "logit_bias");
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

  if (chat) {
    std::string text = render_chat_prompt(req, model);
    // The template writes <bos> itself: no second one from the tokenizer unless asked (vLLM's
    // add_special_tokens).
    p.prompt_ids.push_back(tok.encode(text, req.add_special_tokens.value_or(false)));
    p.prompt_texts.push_back(std::move(text));
  } else {
    for (size_t i = 0; i < req.prompts.size(); ++i) {
      const PromptInput& in = req.prompts[i];
      if (in.is_ids) {
        check_ids(in.ids, tok.vocab_size(), "prompt");
        p.prompt_ids.push_back(in.ids);
        p.prompt_texts.push_back(tok.decode(in.ids, /*skip_special=*/false));
      } else {
        p.prompt_ids.push_back(tok.encode(in.text, req.add_special_tokens.value_or(tok.add_bos_default())));
        p.prompt_texts.push_back(in.text);
      }
      if (p.prompt_ids.back().empty()) throw invalid_request("prompt: encodes to no tokens", "prompt");
    }
  }

  for (size_t pi = 0; pi < p.prompt_ids.size(); ++pi) {
    int len = static_cast<int>(p.prompt_ids[pi].size());
    std::string what = p.prompt_ids.size() > 1 ? fmt::format("prompt[{}]", pi) : std::string(chat ? "messages" : "prompt");
    if (len >= max_model_len) {
      throw invalid_request(fmt::format("{}: the prompt is {} tokens but the maximum model length is {} tokens "
                                        "(the prompt plus at least one new token must fit)",
                                        what, len, max_model_len), chat ? "messages" : "prompt");
    }
    int max_tokens = max_model_len - len;
    if (req.max_tokens) {
      if (len + *req.max_tokens > max_model_len) {
        throw invalid_request(fmt::format("max_tokens: the prompt is {} tokens and max_tokens is {}, together more "
                                          "than the maximum model length of {} tokens",
                                          len, *req.max_tokens, max_model_len), "max_tokens");
      }
      max_tokens = *req.max_tokens;
    }
    if (req.min_tokens > max_tokens) {
      throw invalid_request(fmt::format("min_tokens: {} is more than max_tokens ({}{})", req.min_tokens, max_tokens,
                                        req.max_tokens ? "" : ", what the model length leaves after the prompt"),
                            "min_tokens");
    }
    for (int k = 0; k < req.n; ++k) {
      PreparedChoice c;
      c.prompt_index = static_cast<int>(pi);
      c.index = static_cast<int>(pi) * req.n + k;
      c.request.id = fmt::format("{}-{}", p.id, c.index);
      c.request.prompt = p.prompt_ids[pi];
      c.request.sampling = sampling_for(req, model.generation, max_tokens);
      // n seeded choices must differ from each other and still reproduce: seed + choice number.
      if (c.request.sampling.seed) *c.request.sampling.seed += static_cast<uint64_t>(k);
      p.choices.push_back(std::move(c));
    }
  }
  p.api = std::move(req);
  return p;
}

}  // namespace gs::api
