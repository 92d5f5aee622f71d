#include "api/openai_request.h"

#include <fmt/format.h>

#include "api/api_error.h"
#include "api/chat_messages.h"
#include "api/json_fields.h"

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

// Fields that exist in the OpenAI API but that this server does not implement: refused, never
// silently ignored, so a client does not get output that ignores what it asked for.
void refuse_unsupported(const FieldReader& f, const json& body) {
  if (const json* rf = f.object("response_format")) {
    auto t = rf->find("type");
    if (t == rf->end() || !t->is_string() || *t != "text") {
      throw unsupported("response_format: only {\"type\": \"text\"} is supported (no guided decoding)", "response_format");
    }
  }
  if (const json* lb = f.object("logit_bias"); lb && !lb->empty()) {
    throw unsupported("logit_bias is not supported", "logit_bias");
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
  (void)body;
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

std::vector<int> parse_token_list(const json& v, const std::string& name) {
  std::vector<int> ids;
  for (const auto& x : v) {
    if (!x.is_number_integer() || x.get<int64_t>() < 0 || x.get<int64_t>() > INT32_MAX) {
      throw invalid_request(fmt::format("{}: token ids must be non-negative integers, got {}", name, brief(x)), name);
    }
    ids.push_back(static_cast<int>(x.get<int64_t>()));
  }
  return ids;
}

// Fields shared by both endpoints.
void parse_common(const FieldReader& f, const json& body, OpenAIRequest& r) {
  refuse_unsupported(f, body);
  r.model = f.string("model").value_or("");
  r.temperature = f.number("temperature", 0, 2);
  if (auto p = f.number("top_p", 0, 1)) {
    if (*p <= 0) throw invalid_request("top_p: must be in (0, 1], got 0", "top_p");
    r.top_p = p;
  }
  if (auto k = f.integer("top_k", -1, INT32_MAX)) r.top_k = static_cast<int>(*k < 0 ? 0 : *k);
  r.min_p = f.number("min_p", 0, 1);
  if (auto s = f.integer("seed", INT64_MIN, INT64_MAX)) r.seed = static_cast<uint64_t>(*s);
  r.presence_penalty = f.number("presence_penalty", -2, 2).value_or(0);
  r.frequency_penalty = f.number("frequency_penalty", -2, 2).value_or(0);
  r.stop = parse_stop(f);
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
  auto mt = f.integer("max_tokens", 1, INT32_MAX);
  auto mct = f.integer("max_completion_tokens", 1, INT32_MAX);
  if (mt && mct && *mt != *mct) {
    throw invalid_request(fmt::format("max_tokens ({}) and max_completion_tokens ({}) disagree", *mt, *mct),
                          "max_completion_tokens");
  }
  if (mct) r.max_tokens = static_cast<int>(*mct);
  else if (mt) r.max_tokens = static_cast<int>(*mt);
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
  r.messages = normalize_messages(*msgs);
  parse_tools(f, r);
  if (const json* kw = f.object("chat_template_kwargs")) {
    r.chat_template_kwargs = *kw;
    r.enable_thinking = FieldReader(*kw, "chat_template_kwargs").boolean("enable_thinking").value_or(false);
  }
  bool logprobs = f.boolean("logprobs").value_or(false);
  auto top = f.integer("top_logprobs", 0, kMaxTopLogprobs);
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
  if (auto lp = f.integer("logprobs", 0, kMaxTopLogprobs)) r.logprobs = static_cast<int>(*lp);
  return r;
}

}  // namespace gs::api
