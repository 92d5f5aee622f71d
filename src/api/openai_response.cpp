#include "api/openai_response.h"

#include "api/request_preparer.h"

namespace gs::api {

using nlohmann::json;

namespace {

std::string token_string(const Tokenizer& tok, int id) {
  if (id < 0 || id >= tok.vocab_size()) return "";
  return tok.decode({id}, /*skip_special=*/false);
}

json bytes_of(const std::string& s) {
  json b = json::array();
  for (unsigned char c : s) b.push_back(static_cast<int>(c));
  return b;
}

// JSON strings must be valid UTF-8; a lone byte-fallback token is not, so it is shown as U+FFFD
// (its exact bytes are in "bytes").
json text_value(const std::string& s) {
  return json::parse(json(s).dump(-1, ' ', false, json::error_handler_t::replace));
}

json tool_call_json(const ParsedToolCall& tc, int index, bool streaming) {
  json j = {{"id", new_request_id("call_")}, {"type", "function"},
            {"function", {{"name", tc.name}, {"arguments", tc.arguments}}}};
  if (streaming) j["index"] = index;
  return j;
}

}  // namespace

std::string sse_event(const json& j) {
  return "data: " + j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n";
}

json usage_json(const Usage& u) {
  return {{"prompt_tokens", u.prompt_tokens},
          {"completion_tokens", u.completion_tokens},
          {"total_tokens", u.prompt_tokens + u.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}}};
}

json chat_logprobs_json(const std::vector<TokenLogprob>& lps, const Tokenizer& tok) {
  json content = json::array();
  for (const auto& lp : lps) {
    std::string s = token_string(tok, lp.token);
    json top = json::array();
    for (const auto& [id, v] : lp.top) {
      std::string ts = token_string(tok, id);
      top.push_back({{"token", text_value(ts)}, {"logprob", v}, {"bytes", bytes_of(ts)}});
    }
    content.push_back({{"token", text_value(s)}, {"logprob", lp.logprob}, {"bytes", bytes_of(s)}, {"top_logprobs", top}});
  }
  return {{"content", content}};
}

json completion_logprobs_json(const std::vector<TokenLogprob>& lps, const Tokenizer& tok, size_t offset) {
  json tokens = json::array(), token_lps = json::array(), tops = json::array(), offsets = json::array();
  for (const auto& lp : lps) {
    std::string s = token_string(tok, lp.token);
    tokens.push_back(text_value(s));
    token_lps.push_back(lp.logprob);
    json top = json::object();
    for (const auto& [id, v] : lp.top) top[text_value(token_string(tok, id)).get<std::string>()] = v;
    tops.push_back(lp.top.empty() ? json(nullptr) : top);
    offsets.push_back(offset);
    offset += s.size();
  }
  return {{"tokens", tokens}, {"token_logprobs", token_lps}, {"top_logprobs", tops}, {"text_offset", offsets}};
}

// ---- non-streaming ----------------------------------------------------------------------------

ResponseAccumulator::ResponseAccumulator(const PreparedRequest& req, const Tokenizer& tok) : req_(req), tok_(tok) {}

void ResponseAccumulator::add(const ChoiceUpdate& u) {
  Choice& c = choices_[u.index];
  c.text += u.delta.content;
  c.reasoning += u.delta.reasoning;
  for (const auto& tc : u.delta.tool_calls) c.tool_calls.push_back(tc);
  c.logprobs.insert(c.logprobs.end(), u.logprobs.begin(), u.logprobs.end());
  c.prompt_logprobs.insert(c.prompt_logprobs.end(), u.prompt_logprobs.begin(), u.prompt_logprobs.end());
  if (!u.finish_reason.empty()) c.finish_reason = u.finish_reason;
  if (!u.error.empty() && error_.empty()) {
    error_ = u.error;
    error_status_ = u.error_status >= 500 ? u.error_status : 500;
  }
}

json ResponseAccumulator::finish(const std::string& model_name, const Usage& usage) const {
  const OpenAIRequest& api = req_.api;
  bool chat = api.endpoint == Endpoint::ChatCompletions;
  json choices = json::array();
  for (const auto& pc : req_.choices) {
    auto it = choices_.find(pc.index);
    Choice c = it == choices_.end() ? Choice{} : it->second;
    json logprobs = nullptr;
    if (chat) {
      json msg = {{"role", "assistant"}, {"content", text_value(c.text)}, {"reasoning_content", nullptr}};
      if (!c.reasoning.empty()) msg["reasoning_content"] = text_value(c.reasoning);
      if (!c.tool_calls.empty()) {
        json calls = json::array();
        for (size_t k = 0; k < c.tool_calls.size(); ++k) calls.push_back(tool_call_json(c.tool_calls[k], static_cast<int>(k), false));
        msg["tool_calls"] = calls;
        if (c.text.empty()) msg["content"] = nullptr;
      }
      if (api.logprobs >= 0) logprobs = chat_logprobs_json(c.logprobs, tok_);
      choices.push_back({{"index", pc.index}, {"message", msg}, {"logprobs", logprobs}, {"finish_reason", c.finish_reason}});
    } else {
      std::string prefix = api.echo ? req_.prompt_texts[pc.prompt_index] : std::string();
      if (api.logprobs >= 0) {
        std::vector<TokenLogprob> all = api.echo ? c.prompt_logprobs : std::vector<TokenLogprob>{};
        all.insert(all.end(), c.logprobs.begin(), c.logprobs.end());
        logprobs = completion_logprobs_json(all, tok_, 0);
        // The first prompt token has no logprob (nothing precedes it).
        if (api.echo && !c.prompt_logprobs.empty()) logprobs["token_logprobs"][0] = nullptr;
      }
      choices.push_back({{"index", pc.index}, {"text", text_value(prefix + c.text)}, {"logprobs", logprobs},
                         {"finish_reason", c.finish_reason}});
    }
  }
  return {{"id", req_.id},
          {"object", chat ? "chat.completion" : "text_completion"},
          {"created", req_.created},
          {"model", model_name},
          {"choices", choices},
          {"usage", usage_json(usage)}};
}

// ---- streaming --------------------------------------------------------------------------------

ChunkWriter::ChunkWriter(const PreparedRequest& req, const Tokenizer& tok, std::string model_name)
    : req_(req), tok_(tok), model_(std::move(model_name)) {}

json ChunkWriter::base() const {
  bool chat = req_.api.endpoint == Endpoint::ChatCompletions;
  json j = {{"id", req_.id}, {"object", chat ? "chat.completion.chunk" : "text_completion"},
            {"created", req_.created}, {"model", model_}, {"choices", json::array()}};
  if (req_.api.include_usage) j["usage"] = nullptr;
  return j;
}

std::vector<json> ChunkWriter::start() const {
  std::vector<json> out;
  bool chat = req_.api.endpoint == Endpoint::ChatCompletions;
  for (const auto& pc : req_.choices) {
    json j = base();
    if (chat) {
      j["choices"].push_back({{"index", pc.index}, {"delta", {{"role", "assistant"}, {"content", ""}}},
                              {"logprobs", nullptr}, {"finish_reason", nullptr}});
    } else if (req_.api.echo) {
      j["choices"].push_back({{"index", pc.index}, {"text", text_value(req_.prompt_texts[pc.prompt_index])},
                              {"logprobs", nullptr}, {"finish_reason", nullptr}});
    } else {
      continue;
    }
    out.push_back(std::move(j));
  }
  return out;
}

std::vector<json> ChunkWriter::update(const ChoiceUpdate& u) {
  bool chat = req_.api.endpoint == Endpoint::ChatCompletions;
  bool want_lp = req_.api.logprobs >= 0 && !u.logprobs.empty();
  // Every update that consumed generated tokens is a chunk, even when they show no text yet (a
  // byte-fallback run held back, a skipped special token, an id the tokenizer lacks): clients
  // time tokens by chunks, as vLLM's server and benchmark do.
  // "error" and "abort" are not OpenAI finish reasons: an errored choice ends without one.
  const bool finished = !u.finish_reason.empty() && u.error.empty();
  if (u.delta.empty() && !finished && !want_lp && u.tokens.empty()) return {};
  json finish = finished ? json(u.finish_reason) : json(nullptr);
  json j = base();
  if (chat) {
    json delta = json::object();
    if (!u.delta.reasoning.empty()) delta["reasoning_content"] = text_value(u.delta.reasoning);
    if (!u.delta.content.empty() || (u.delta.empty() && !u.tokens.empty())) {
      delta["content"] = text_value(u.delta.content);  // "" for tokens without visible text (vLLM does the same)
    }
    if (!u.delta.tool_calls.empty()) {
      json calls = json::array();
      for (const auto& tc : u.delta.tool_calls) calls.push_back(tool_call_json(tc, tool_call_count_[u.index]++, true));
      delta["tool_calls"] = calls;
    }
    j["choices"].push_back({{"index", u.index}, {"delta", delta},
                            {"logprobs", want_lp ? chat_logprobs_json(u.logprobs, tok_) : json(nullptr)},
                            {"finish_reason", finish}});
  } else {
    size_t& offset = text_offset_[u.index];
    json lp = want_lp ? completion_logprobs_json(u.logprobs, tok_, offset) : json(nullptr);
    for (const auto& l : u.logprobs) offset += token_string(tok_, l.token).size();
    j["choices"].push_back({{"index", u.index}, {"text", text_value(u.delta.content)}, {"logprobs", lp},
                            {"finish_reason", finish}});
  }
  return {j};
}

json ChunkWriter::usage_chunk(const Usage& usage) const {
  json j = base();
  j["usage"] = usage_json(usage);
  return j;
}

}  // namespace gs::api
