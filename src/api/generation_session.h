// One OpenAI request in flight: its n (x prompts) engine requests, each choice's decoder, usage
// and timing. The HTTP handler (streaming or not) and `gemmaserve run` drive it the same way:
// submit(), then poll() until it returns false, turning each ChoiceUpdate into response JSON.
// Destroying a session aborts whatever of it still runs in the engine, so a handler that exits
// early (client gone, exception) never leaves pages behind.
#pragma once
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "api/choice_decoder.h"
#include "api/engine_client.h"
#include "api/request_preparer.h"
#include "api/serving_model.h"

namespace gs::api {

struct Usage {
  int prompt_tokens = 0;
  int completion_tokens = 0;
  int cached_tokens = 0;  // of prompt_tokens, served from the prefix cache
};

// Hooks for metrics; every method may be called from many request threads at once.
class RequestObserver {
 public:
  virtual ~RequestObserver() = default;
  virtual void on_first_token(double seconds_since_arrival) = 0;
  virtual void on_inter_token(double seconds, int tokens) = 0;  // `tokens` arrived after `seconds`
  virtual void on_choice_finished(const std::string& finish_reason) = 0;
  virtual void on_request_finished(const Usage& usage) = 0;
};

struct ChoiceUpdate {
  int index = 0;
  ChoiceDelta delta;
  std::vector<int> tokens;                     // generated tokens consumed by this update
  std::vector<TokenLogprob> logprobs;          // for `tokens`, when asked
  std::vector<TokenLogprob> prompt_logprobs;   // once, with the first update, when asked
  // Set on the last update of the choice. With `error` set it is "error" or "abort", a label for
  // metrics only: clients never see either (the stream's error event or the error response says
  // what happened).
  std::string finish_reason;
  // The engine ended the choice without a result: it failed (500), or the server stopped it before
  // it finished, at shutdown (503). A client's own abort never produces one (nobody reads it).
  std::string error;
  int error_status = 0;  // the HTTP status of `error`
};

class GenerationSession {
 public:
  GenerationSession(EngineClient& engine, const ServingModel& model, PreparedRequest req,
                    RequestObserver* observer = nullptr);
  ~GenerationSession();
  GenerationSession(const GenerationSession&) = delete;
  GenerationSession& operator=(const GenerationSession&) = delete;

  // Hands every choice to the engine. On a refusal (queue full: 429, ...) the choices already
  // submitted are aborted and ApiError carries the engine's status and message.
  void submit();
  // Waits up to `wait` for engine output and appends what it produced to `out`. Returns false
  // once every choice has finished (the final updates are in `out`).
  bool poll(std::chrono::milliseconds wait, std::vector<ChoiceUpdate>& out);
  // Stops every unfinished choice in the engine (the client went away).
  void abort();

  const PreparedRequest& request() const { return req_; }
  Usage usage() const;
  bool finished() const;

 private:
  struct Choice;
  void consume(Choice& c, RequestOutput&& o, std::vector<ChoiceUpdate>& out);
  void finish_choice(Choice& c, const std::string& reason);

  EngineClient& engine_;
  const ServingModel& model_;
  PreparedRequest req_;
  RequestObserver* observer_;
  std::vector<std::unique_ptr<Choice>> choices_;
  std::chrono::steady_clock::time_point start_;
  bool reported_ = false;
};

}  // namespace gs::api
