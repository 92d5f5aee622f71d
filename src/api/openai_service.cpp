#include "api/openai_service.h"

#include <fmt/format.h>

#include "api/api_error.h"
#include "api/chat_messages.h"
#include "api/json_fields.h"
#include "api/request_preparer.h"

namespace gs::api {

using nlohmann::json;

// ---- SseStream --------------------------------------------------------------------------------

SseStream::SseStream(std::unique_ptr<GenerationSession> session, const ServingModel& model)
    : session_(std::move(session)), writer_(session_->request(), *model.tokenizer, model.name) {}

bool SseStream::next(std::string& out, std::chrono::milliseconds wait) {
  if (done_) return false;
  std::vector<ChoiceUpdate> updates;
  bool running = session_->poll(wait, updates);
  // The role (or echo) chunk goes out with the first engine output, as vLLM sends it: a client
  // that times its first chunk (vLLM's benchmark does) must not see it before a token exists.
  if (!started_ && (!updates.empty() || !running)) {
    started_ = true;
    for (const auto& j : writer_.start()) out += sse_event(j);
  }
  for (const auto& u : updates) {
    for (const auto& j : writer_.update(u)) out += sse_event(j);
    if (!u.error.empty() && error_.empty()) {
      error_ = u.error;
      error_status_ = u.error_status >= 500 ? u.error_status : 500;
    }
  }
  if (running) return true;
  if (session_->request().api.include_usage) out += sse_event(writer_.usage_chunk(session_->usage()));
  // Last before [DONE]: the official clients raise on an error event, so what precedes it is read.
  if (!error_.empty()) out += sse_event(stream_error_body(error_status_, error_));
  out += kSseDone;
  done_ = true;
  return false;
}

void SseStream::cancel(int status, const std::string& message) {
  if (done_ || session_->finished()) return;
  session_->abort();
  if (error_.empty()) {
    error_ = message;
    error_status_ = status;
  }
}

// ---- OpenAIService ----------------------------------------------------------------------------

OpenAIService::OpenAIService(EngineClient& engine, std::shared_ptr<const ServingModel> model, RequestObserver* observer)
    : engine_(engine),
      model_(std::move(model)),
      observer_(observer),
      created_(std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count()) {}

PreparedRequest OpenAIService::prepare(Endpoint endpoint, const std::string& body) const {
  RequestJson j = parse_json_body(body);
  return prepare(endpoint == Endpoint::ChatCompletions ? parse_chat_request(j) : parse_completion_request(j));
}

PreparedRequest OpenAIService::prepare(OpenAIRequest req) const {
  return prepare_request(std::move(req), *model_, engine_.limits());
}

std::unique_ptr<GenerationSession> OpenAIService::start(PreparedRequest req) {
  auto s = std::make_unique<GenerationSession>(engine_, *model_, std::move(req), observer_);
  s->submit();
  return s;
}

json OpenAIService::complete(PreparedRequest req, const std::function<bool()>& client_gone) {
  auto session = start(std::move(req));
  ResponseAccumulator acc(session->request(), *model_->tokenizer);
  std::vector<ChoiceUpdate> updates;
  bool running = true;
  auto last_check = std::chrono::steady_clock::now();
  while (running) {
    updates.clear();
    running = session->poll(std::chrono::milliseconds(50), updates);
    for (const auto& u : updates) acc.add(u);
    auto now = std::chrono::steady_clock::now();
    if (running && client_gone && now - last_check >= std::chrono::milliseconds(50)) {
      last_check = now;
      if (client_gone()) {
        session->abort();  // counted as an aborted request; the engine frees its pages now
        throw ClientGone();
      }
    }
  }
  if (!acc.error().empty()) throw ApiError(acc.error_status(), acc.error(), error_type_for_status(acc.error_status()));
  return acc.finish(model_->name, session->usage());
}

std::unique_ptr<SseStream> OpenAIService::stream(PreparedRequest req) {
  return std::make_unique<SseStream>(start(std::move(req)), *model_);
}

json OpenAIService::models() const { return {{"object", "list"}, {"data", json::array({model(model_->name)})}}; }

json OpenAIService::model(const std::string& id) const {
  if (id != model_->name) {
    throw ApiError(404, fmt::format("The model `{}` does not exist; this server serves `{}`", id, model_->name),
                   "not_found_error", "model", "model_not_found");
  }
  return {{"id", model_->name}, {"object", "model"}, {"created", created_}, {"owned_by", "gemmaserve"},
          {"max_model_len", engine_.limits().max_model_len}};
}

json OpenAIService::tokenize(const std::string& body) const {
  RequestJson j = parse_json_body(body);
  FieldReader f(j);
  const Tokenizer& tok = *model_->tokenizer;
  std::vector<int> ids;
  if (f.raw("messages")) {
    // The chat form: the exact prompt /v1/chat/completions would run.
    OpenAIRequest r = parse_chat_request(j);
    bool add_gen = f.boolean("add_generation_prompt").value_or(true);
    // Images count as the tokens they expand to (begin, soft tokens, end), so they are loaded here too.
    ids = tokenize_chat_prompt(r, *model_, add_gen).tokens.ids;
  } else {
    auto prompt = f.string("prompt");
    if (!prompt) throw invalid_request("prompt: required (a string), or messages", "prompt");
    ids = tok.encode(*prompt, f.boolean("add_special_tokens").value_or(tok.add_bos_default()));
  }
  json out = {{"count", ids.size()}, {"max_model_len", engine_.limits().max_model_len}, {"tokens", ids}};
  if (f.boolean("return_token_strs").value_or(false)) {
    json strs = json::array();
    for (int id : ids) strs.push_back(std::string(tok.token_text(id)));
    out["token_strs"] = json::parse(strs.dump(-1, ' ', false, json::error_handler_t::replace));
  }
  return out;
}

json OpenAIService::detokenize(const std::string& body) const {
  RequestJson j = parse_json_body(body);
  FieldReader f(j);
  const RequestJson* tokens = f.array("tokens");
  if (!tokens) throw invalid_request("tokens: required (an array of token ids)", "tokens");
  const Tokenizer& tok = *model_->tokenizer;
  std::vector<int> ids;
  for (const auto& t : *tokens) {
    if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= tok.vocab_size()) {
      throw invalid_request(fmt::format("tokens: {} is not a token id of this model (vocabulary size {})", brief(t),
                                        tok.vocab_size()), "tokens");
    }
    ids.push_back(static_cast<int>(t.get<int64_t>()));
  }
  // skip_special_tokens (a gemmaserve extension; vLLM's /detokenize has none): what a client needs
  // to tell special tokens from text, e.g. `gemmaserve bench` probing the vocabulary.
  std::string text = tok.decode(ids, f.boolean("skip_special_tokens").value_or(false));
  return {{"prompt", json::parse(json(text).dump(-1, ' ', false, json::error_handler_t::replace))}};
}

}  // namespace gs::api
