// The OpenAI-compatible API over the engine, independent of HTTP: request bodies in, response
// bodies (or SSE text) out. src/server puts it behind cpp-httplib; `gemmaserve run` calls it
// directly, so both go through exactly the same parsing, template, sampling and stop logic.
#pragma once
#include <nlohmann/json.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

#include "api/engine_client.h"
#include "api/generation_session.h"
#include "api/openai_response.h"
#include "api/serving_model.h"

namespace gs::api {

// A streaming response being produced: call next() until it returns false. Dropping it early
// (the client went away) aborts the request in the engine.
class SseStream {
 public:
  SseStream(std::unique_ptr<GenerationSession> session, const ServingModel& model);
  // Appends the SSE text that became ready within `wait` (possibly none). Returns false after
  // the final "data: [DONE]" has been appended.
  bool next(std::string& out, std::chrono::milliseconds wait);
  // The client went away: the request is aborted in the engine; nothing more is worth sending.
  void abort() { session_->abort(); }
  // The server ends the stream (it is shutting down): the request is aborted in the engine and the
  // stream ends with an error event of `status` (then [DONE]), as when the engine ends it.
  void cancel(int status, const std::string& message);
  const PreparedRequest& request() const { return session_->request(); }

 private:
  std::unique_ptr<GenerationSession> session_;
  ChunkWriter writer_;
  bool started_ = false, done_ = false;
  std::string error_;
  int error_status_ = 0;
};

// Thrown by OpenAIService::complete when the client went away before the response was ready.
struct ClientGone : std::runtime_error {
  ClientGone() : std::runtime_error("the client closed the connection before the response was ready") {}
};

class OpenAIService {
 public:
  OpenAIService(EngineClient& engine, std::shared_ptr<const ServingModel> model, RequestObserver* observer = nullptr);

  // Parses and prepares a request body (ApiError on anything wrong with it).
  PreparedRequest prepare(Endpoint endpoint, const std::string& body) const;
  PreparedRequest prepare(OpenAIRequest req) const;
  // Runs a non-streaming request to the end and returns the response object; a choice the engine
  // failed or stopped is an ApiError (500, or 503 at shutdown). `client_gone`,
  // when given, is asked a few times a second; once it says true the request is aborted in the
  // engine (its pages return at once) and ClientGone is thrown.
  nlohmann::json complete(PreparedRequest req, const std::function<bool()>& client_gone = {});
  // Submits a streaming request; ApiError (e.g. 429) is thrown before any byte is produced.
  std::unique_ptr<SseStream> stream(PreparedRequest req);

  nlohmann::json models() const;                       // GET /v1/models
  // GET /v1/models/{id}: the model object, or ApiError 404 (model_not_found) for another id.
  nlohmann::json model(const std::string& id) const;
  nlohmann::json tokenize(const std::string& body) const;    // POST /tokenize
  nlohmann::json detokenize(const std::string& body) const;  // POST /detokenize

  const ServingModel& model() const { return *model_; }
  EngineClient& engine() { return engine_; }

 private:
  std::unique_ptr<GenerationSession> start(PreparedRequest req);

  EngineClient& engine_;
  std::shared_ptr<const ServingModel> model_;
  RequestObserver* observer_;
  int64_t created_;
};

}  // namespace gs::api
