// What the API layer needs from the engine, as an interface: the server and `gemmaserve run`
// plug in the real gs::Engine (EngineClientFor), tests can plug in a scripted one.
#pragma once
#include <string>

#include "engine/engine.h"
#include "engine/request.h"

namespace gs::api {

class EngineClient {
 public:
  virtual ~EngineClient() = default;
  virtual Engine::SubmitResult submit(GenerationRequest req) = 0;
  virtual void abort(const std::string& request_id) = 0;
  virtual EngineStats stats() const = 0;
  // What submit() checks a request against; the API layer checks each choice against the same
  // limits before it submits any (request_preparer.h).
  virtual RequestLimits limits() const = 0;
};

class EngineClientFor final : public EngineClient {
 public:
  explicit EngineClientFor(Engine& engine) : e_(engine) {}
  Engine::SubmitResult submit(GenerationRequest req) override;
  void abort(const std::string& request_id) override;
  EngineStats stats() const override;
  RequestLimits limits() const override;

 private:
  Engine& e_;
};

}  // namespace gs::api
