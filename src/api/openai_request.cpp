#include "api/openai_request.h"

#include <fmt/format.h>

#include <algorithm>

#include "api/api_error.h"
#include "api/chat_messages.h"
#include "api/json_fields.h"
#include "api/request_fields.h"

namespace gs::api {

using json = RequestJson;  // every value here comes from a request body

json parse_json_body(const std::string& body) {
  if (body.empty()) throw invalid_request("request body is empty; expected a JSON object");
  try {
    json j = json::parse(body);
    if (!j.is_object()) throw invalid_request(fmt::format("request body must be a JSON object, got {}", brief(j)));
    return j;
  } catch (const json::exception& e) {
    // Not only parse_error: a number too large for a double ("1e999") is an out_of_range from
    // the parser, and it is just as much the client's malformed body.
    throw invalid_request(fmt::format("request body is not valid JSON: {}", e.what()));
  }
}

namespace {

// Fields that exist in the OpenAI or vLLM API but that this server does not implement: refused
// when set to anything but their no-op value, never silently ignored, so a client does not get
// output that ignores what it asked for (docs/api-fields.md says why each one is refused).
void refuse_unsupported(const FieldReader& f, Endpoint endpoint) {
  if (const json* rf = f.object("response_format")) {
    auto t = rf->find("type");
    if (t == rf->end() || !t->is_string() || *t != "text") {
      throw unsupported("response_format: only {\"type\": \"text\"} is supported (no guided decoding)", "response_format");
    }
  }
  if (f.raw("functions") || f.raw("function_call")) {
    throw unsupported("functions/function_call (legacy) are not supported; use tools", "functions");
  }
  if (f.raw("audio")) throw unsupported("audio output is not supported", "audio");
  if (const json* m = f.array("modalities")) {
    for (const auto& x : *m) {
      if (x != "text") throw unsupported("modalities: only \"text\" is supported", "modalities");
    }
  }
  if (auto s = f.string("suffix"); s && !s->empty()) throw unsupported("suffix is not supported", "suffix");
  // Set at all: each asks for something this server cannot do.
  static constexpr std::pair<const char*, const char*> kRefusedWhenSet[] = {
      {"guided_json", "no guided decoding"},
      {"guided_regex", "no guided decoding"},
      {"guided_choice", "no guided decoding"},
      {"guided_grammar", "no guided decoding"},
      {"guided_decoding_backend", "no guided decoding"},
      {"guided_whitespace_pattern", "no guided decoding"},
      {"structural_tag", "no guided decoding"},
      {"structured_outputs", "no guided decoding"},
      {"truncate_prompt_tokens", "prompts are never truncated; a prompt that does not fit is a 400"},
      {"prompt_logprobs", "use echo with logprobs on /v1/completions"},
      {"kv_transfer_params", "no disaggregated prefill"},
      {"prompt_embeds", "prompts are text or token ids"},
      {"cache_salt", "the prefix cache is shared by all requests"},
      {"chat_template", "only the model's own chat template is rendered"},
      {"verbosity", "the model has no verbosity control"},
      {"web_search_options", "no web search"},
  };
  for (auto [name, why] : kRefusedWhenSet)
    if (f.raw(name)) throw unsupported(fmt::format("{} is not supported ({})", name, why), name);
  // Non-empty lists and objects.
  static constexpr std::pair<const char*, const char*> kRefusedWhenNonEmpty[] = {
      {"allowed_token_ids", "no token allow-lists; logit_bias can favour tokens"},
      {"bad_words", "no bad-words lists; logit_bias -100 can ban single tokens"},
      {"logits_processors", "no custom logits processors"},
      {"vllm_xargs", "no custom logits processors"},
      {"documents", "no document rendering in the chat template"},
  };
  for (auto [name, why] : kRefusedWhenNonEmpty)
    if (const json* v = f.raw(name); v && !(v->is_array() || v->is_object() ? v->empty() : false))
      throw unsupported(fmt::format("{} is not supported ({})", name, why), name);
  if (const json* v = f.object("mm_processor_kwargs"); v && !v->empty() && endpoint == Endpoint::Completions) {
    throw unsupported("mm_processor_kwargs is not supported on /v1/completions (images come in chat messages)",
                      "mm_processor_kwargs");
  }
  // Booleans refused at their non-default value.
  auto refuse_if = [&](const char* name, bool refused_value, const char* why) {
    if (f.boolean(name) == refused_value) throw unsupported(fmt::format("{}: {} is not supported ({})", name,
                                                                        refused_value ? "true" : "false", why), name);
  };
  refuse_if("use_beam_search", true, "no beam search");
  refuse_if("return_tokens_as_token_ids", true, "logprobs name tokens by their text");
  refuse_if("return_token_ids", true, "responses carry text");
  if (auto lp = f.number("length_penalty"); lp && *lp != 1)
    throw unsupported("length_penalty is not supported (it only acts on beam search, which is not supported)",
                      "length_penalty");
  if (endpoint == Endpoint::ChatCompletions) {
    refuse_if("echo", true, "the last message is not echoed in chat completions");
    refuse_if("continue_final_message", true, "the prompt always ends with the generation prompt");
    refuse_if("add_generation_prompt", false, "the prompt always ends with the generation prompt");
  }
}

// logit_bias: {"token id": bias}, as OpenAI and vLLM take it. Ids and biases are checked against
// the vocabulary and [-100, 100] by the request validation.
std::vector<std::pair<int, float>> parse_logit_bias(const FieldReader& f) {
  const json* lb = f.object("logit_bias");
  if (!lb) return {};
  std::vector<std::pair<int, float>> out;
  for (auto it = lb->begin(); it != lb->end(); ++it) {
    const std::string& key = it.key();
    const size_t sign = !key.empty() && key[0] == '-' ? 1 : 0;
    const bool digits = key.size() > sign && key.size() - sign <= 10 &&
                        std::all_of(key.begin() + sign, key.end(), [](char c) { return c >= '0' && c <= '9'; });
    const int64_t id = digits ? std::stoll(key) : 0;
    if (!digits || id < INT32_MIN || id > INT32_MAX) {
      throw invalid_request(fmt::format("logit_bias: keys must be token ids (integers written as strings), got {}",
                                        brief(json(key))), "logit_bias");
    }
    const json& v = it.value();
    if (!v.is_number()) {
      throw invalid_request(fmt::format("logit_bias: the bias of token {} must be a number, got {}", id, brief(v)),
                            "logit_bias");
    }
    // "7" and "007" name one token; the later one wins, as in a Python dict of int keys.
    const float bias = to_float(v.get<double>());
    auto same = std::find_if(out.begin(), out.end(), [&](const auto& e) { return e.first == int(id); });
    if (same != out.end()) same->second = bias;
    else out.push_back({static_cast<int>(id), bias});
  }
  return out;
}

std::vector<std::string> parse_stop(const FieldReader& f) {
  const json* v = f.raw("stop");
  if (!v) return {};
  std::vector<std::string> out;
  if (v->is_string()) {
    out.push_back(v->get<std::string>());
  } else if (v->is_array()) {
    for (const auto& s : *v) {
      if (!s.is_string()) throw invalid_request(fmt::format("stop: every entry must be a string, got {}", brief(s)), "stop");
      out.push_back(s.get<std::string>());
    }
  } else {
    throw invalid_request(fmt::format("stop: must be a string or an array of strings, got {}", brief(*v)), "stop");
  }
  if (out.size() > static_cast<size_t>(kMaxStopStrings)) {
    throw invalid_request(fmt::format("stop: at most {} stop strings, got {}", kMaxStopStrings, out.size()), "stop");
  }
  for (const auto& s : out) {
    if (s.empty()) throw invalid_request("stop: stop strings must not be empty", "stop");
  }
  return out;
}

// Token ids as given; whether they are in the vocabulary is the request validation's to say.
std::vector<int> parse_token_list(const json& v, const std::string& name) {
  std::vector<int> ids;
  for (const auto& x : v) {
    const bool fits = x.is_number_unsigned() ? x.get<uint64_t>() <= INT32_MAX
                      : x.is_number_integer() && x.get<int64_t>() >= INT32_MIN && x.get<int64_t>() <= INT32_MAX;
    if (!fits) {
      throw invalid_request(fmt::format("{}: token ids must be 32-bit integers, got {}", name, brief(x)), name);
    }
    ids.push_back(static_cast<int>(x.get<int64_t>()));
  }
  return ids;
}

// Fields shared by both endpoints.
void parse_common(const FieldReader& f, const json& body, OpenAIRequest& r) {
  refuse_unsupported(f, r.endpoint);
  check_no_effect_fields(f, r.endpoint);
  note_unknown_fields(body, r.endpoint);
  r.model = f.string("model").value_or("");
  r.temperature = f.number("temperature");
  r.top_p = f.number("top_p");
  // -1 is vLLM's "off"; the engine's is 0.
  if (auto k = f.int32("top_k")) r.top_k = *k == -1 ? 0 : *k;
  r.min_p = f.number("min_p");
  if (auto s = f.integer("seed", INT64_MIN, INT64_MAX)) r.seed = static_cast<uint64_t>(*s);
  r.presence_penalty = f.number("presence_penalty").value_or(0);
  r.frequency_penalty = f.number("frequency_penalty").value_or(0);
  r.repetition_penalty = f.number("repetition_penalty").value_or(1);
  r.logit_bias = parse_logit_bias(f);
  r.min_tokens = f.int32("min_tokens").value_or(0);
  r.stop = parse_stop(f);
  r.include_stop_str_in_output = f.boolean("include_stop_str_in_output").value_or(false);
  r.add_special_tokens = f.boolean("add_special_tokens");
  if (const json* ids = f.array("stop_token_ids")) r.stop_token_ids = parse_token_list(*ids, "stop_token_ids");
  r.ignore_eos = f.boolean("ignore_eos").value_or(false);
  r.skip_special_tokens = f.boolean("skip_special_tokens").value_or(true);
  r.n = static_cast<int>(f.integer("n", 1, kMaxChoices).value_or(1));
  if (auto b = f.integer("best_of", 1, kMaxChoices); b && *b != r.n) {
    throw unsupported("best_of different from n is not supported", "best_of");
  }
  r.stream = f.boolean("stream").value_or(false);
  if (const json* so = f.object("stream_options")) {
    if (!r.stream) throw invalid_request("stream_options: only allowed when stream is true", "stream_options");
    r.include_usage = FieldReader(*so, "stream_options").boolean("include_usage").value_or(false);
  }
  // max_completion_tokens is the newer name of max_tokens; when both are given they must agree.
  auto mt = f.int32("max_tokens");
  auto mct = f.int32("max_completion_tokens");
  if (mt && mct && *mt != *mct) {
    throw invalid_request(fmt::format("max_tokens ({}) and max_completion_tokens ({}) disagree", *mt, *mct),
                          "max_completion_tokens");
  }
  r.max_tokens = mt ? mt : mct;
  if (!mt && mct) r.max_tokens_param = "max_completion_tokens";
}

// A logprob count (chat top_logprobs, completions logprobs). The engine's logprobs = -1 means
// "none", so a negative count is refused here, where it is still the client's; the upper bound is
// the request validation's.
std::optional<int> logprob_count(const FieldReader& f, const char* key) {
  auto n = f.int32(key);
  if (n && *n < 0) throw invalid_request(fmt::format("{}: must be >= 0, got {}", key, *n), key);
  return n;
}

PromptInput parse_one_prompt(const json& p, const std::string& name) {
  PromptInput in;
  if (p.is_string()) {
    in.text = p.get<std::string>();
  } else if (p.is_array()) {
    in.is_ids = true;
    in.ids = parse_token_list(p, name);
    if (in.ids.empty()) throw invalid_request(fmt::format("{}: token id prompt is empty", name), "prompt");
  } else {
    throw invalid_request(fmt::format("{}: must be a string or an array of token ids, got {}", name, brief(p)), "prompt");
  }
  return in;
}

}  // namespace

OpenAIRequest parse_chat_request(const json& body) {
  FieldReader f(body);
  OpenAIRequest r;
  r.endpoint = Endpoint::ChatCompletions;
  parse_common(f, body, r);
  const json* msgs = f.array("messages");
  if (!msgs) throw invalid_request("messages: required", "messages");
  r.messages = normalize_messages(*msgs, &r.images);
  if (const json* kw = f.object("mm_processor_kwargs")) {
    FieldReader k(*kw, "mm_processor_kwargs");
    for (auto it = kw->begin(); it != kw->end(); ++it) {
      if (it.key() != "max_soft_tokens") {
        throw unsupported(fmt::format("mm_processor_kwargs.{}: not an argument of the Gemma-4 image processor "
                                      "(max_soft_tokens is)", it.key()), "mm_processor_kwargs");
      }
    }
    r.max_soft_tokens = k.int32("max_soft_tokens");
  }
  parse_tools(f, r);
  std::optional<bool> thinking;
  if (const json* kw = f.object("chat_template_kwargs")) {
    r.chat_template_kwargs = *kw;
    thinking = FieldReader(*kw, "chat_template_kwargs").boolean("enable_thinking");
  }
  if (auto effort = f.string("reasoning_effort")) {
    // The Gemma templates have one switch, thinking on or off: every effort but "none" turns it on.
    if (*effort != "none" && *effort != "low" && *effort != "medium" && *effort != "high") {
      throw invalid_request(fmt::format("reasoning_effort: must be \"none\", \"low\", \"medium\" or \"high\", got {}",
                                        brief(json(*effort))), "reasoning_effort");
    }
    const bool on = *effort != "none";
    if (thinking && *thinking != on) {
      throw invalid_request(fmt::format("reasoning_effort: \"{}\" contradicts chat_template_kwargs.enable_thinking={}",
                                        *effort, *thinking), "reasoning_effort");
    }
    thinking = on;
    r.reasoning_effort = effort;
  }
  r.enable_thinking = thinking.value_or(false);
  bool logprobs = f.boolean("logprobs").value_or(false);
  auto top = logprob_count(f, "top_logprobs");
  if (top && !logprobs) throw invalid_request("top_logprobs: requires logprobs to be true", "top_logprobs");
  r.logprobs = logprobs ? static_cast<int>(top.value_or(0)) : -1;
  return r;
}

OpenAIRequest parse_completion_request(const json& body) {
  FieldReader f(body);
  OpenAIRequest r;
  r.endpoint = Endpoint::Completions;
  parse_common(f, body, r);
  const json* p = f.raw("prompt");
  if (!p) throw invalid_request("prompt: required", "prompt");
  if (p->is_array() && !p->empty() && (p->at(0).is_string() || p->at(0).is_array())) {
    // A batch of prompts: every element a string or a token-id array.
    for (size_t i = 0; i < p->size(); ++i) r.prompts.push_back(parse_one_prompt(p->at(i), fmt::format("prompt[{}]", i)));
  } else {
    if (p->is_array() && p->empty()) throw invalid_request("prompt: must not be empty", "prompt");
    r.prompts.push_back(parse_one_prompt(*p, "prompt"));
  }
  if (r.prompts.size() * r.n > static_cast<size_t>(kMaxChoices)) {
    throw invalid_request(fmt::format("prompt: {} prompts x n={} exceeds {} choices per request", r.prompts.size(), r.n,
                                      kMaxChoices), "prompt");
  }
  r.echo = f.boolean("echo").value_or(false);
  if (auto lp = logprob_count(f, "logprobs")) r.logprobs = *lp;
  return r;
}

}  // namespace gs::api
