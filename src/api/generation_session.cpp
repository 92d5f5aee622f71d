#include "api/generation_session.h"

#include <algorithm>

#include "api/api_error.h"
#include "api/request_problem_error.h"

namespace gs::api {

using Clock = std::chrono::steady_clock;

struct GenerationSession::Choice {
  PreparedChoice prepared;
  std::shared_ptr<OutputChannel> channel;
  ChoiceDecoder decoder;
  bool submitted = false;
  bool finished = false;
  bool made_tool_calls = false;
  bool first_output = true;
  int completion_tokens = 0;
  int cached_tokens = 0;
  Clock::time_point last_token;

  Choice(PreparedChoice p, ChoiceDecoder d) : prepared(std::move(p)), decoder(std::move(d)) {}
};

GenerationSession::GenerationSession(EngineClient& engine, const ServingModel& model, PreparedRequest req,
                                     RequestObserver* observer)
    : engine_(engine), model_(model), req_(std::move(req)), observer_(observer), start_(Clock::now()) {
  const OpenAIRequest& api = req_.api;
  ChoiceDecoder::Options opt;
  opt.chat = api.endpoint == Endpoint::ChatCompletions;
  opt.parse_tool_calls = opt.chat && api.tools.is_array() && !api.tools.empty();
  opt.skip_special = api.skip_special_tokens;
  opt.stop = api.stop;
  opt.include_stop = api.include_stop_str_in_output;
  opt.min_tokens = api.min_tokens;
  for (auto& pc : req_.choices) {
    auto c = std::make_unique<Choice>(pc, ChoiceDecoder(model_.tokenizer, model_.markers, opt));
    c->channel = c->prepared.request.output;
    choices_.push_back(std::move(c));
  }
}

GenerationSession::~GenerationSession() { abort(); }

void GenerationSession::submit() {
  for (auto& c : choices_) {
    GenerationRequest r = c->prepared.request;  // the channel is shared, the rest copied
    r.arrival = Clock::now();
    Engine::SubmitResult res = engine_.submit(std::move(r));
    if (!res.ok) {
      abort();
      int status = res.http_status >= 400 ? res.http_status : 500;
      std::string message = res.error.empty() ? "the engine refused the request" : res.error, param;
      if (!res.param.empty()) {
        // A validation problem reads "param: detail" (RequestProblem::message): name the client's field.
        param = client_param(res.param, req_.api);
        if (message.rfind(res.param + ": ", 0) == 0) message = param + message.substr(res.param.size());
      }
      throw ApiError(status, message, error_type_for_status(status), param);
    }
    c->submitted = true;
  }
}

void GenerationSession::abort() {
  for (auto& c : choices_) {
    if (c->submitted && !c->finished) {
      engine_.abort(c->prepared.request.id);
      finish_choice(*c, "abort");
    }
  }
}

bool GenerationSession::finished() const {
  return std::all_of(choices_.begin(), choices_.end(), [](const auto& c) { return c->finished; });
}

void GenerationSession::finish_choice(Choice& c, const std::string& reason) {
  c.finished = true;
  if (observer_) {
    observer_->on_choice_finished(reason);
    if (finished() && !reported_) {
      reported_ = true;
      observer_->on_request_finished(usage());
    }
  }
}

void GenerationSession::consume(Choice& c, RequestOutput&& o, std::vector<ChoiceUpdate>& out) {
  ChoiceUpdate u;
  u.index = c.prepared.index;
  if (c.first_output) {
    c.first_output = false;
    c.cached_tokens = o.cached_prompt_tokens;
    u.prompt_logprobs = std::move(o.prompt_logprobs);
  }
  auto now = Clock::now();
  if (!o.new_tokens.empty() && observer_) {
    if (c.completion_tokens == 0) {
      observer_->on_first_token(std::chrono::duration<double>(now - start_).count());
    } else {
      observer_->on_inter_token(std::chrono::duration<double>(now - c.last_token).count(),
                                static_cast<int>(o.new_tokens.size()));
    }
  }
  if (!o.new_tokens.empty()) c.last_token = now;

  bool stopped = false;
  for (size_t i = 0; i < o.new_tokens.size() && !stopped; ++i) {
    ChoiceDelta d = c.decoder.push(o.new_tokens[i]);
    u.tokens.push_back(o.new_tokens[i]);
    if (i < o.logprobs.size()) u.logprobs.push_back(std::move(o.logprobs[i]));
    u.delta.reasoning += d.reasoning;
    u.delta.content += d.content;
    for (auto& tc : d.tool_calls) u.delta.tool_calls.push_back(std::move(tc));
    stopped = d.stopped;
  }
  c.completion_tokens += static_cast<int>(u.tokens.size());
  if (!u.delta.tool_calls.empty()) c.made_tool_calls = true;

  if (stopped) {
    // A stop string ended the choice; the engine may have run ahead, so stop it.
    engine_.abort(c.prepared.request.id);
    u.finish_reason = "stop";
  } else if (o.finish != FinishReason::None) {
    ChoiceDelta tail = c.decoder.finish();
    u.delta.reasoning += tail.reasoning;
    u.delta.content += tail.content;
    for (auto& tc : tail.tool_calls) u.delta.tool_calls.push_back(std::move(tc));
    if (!tail.tool_calls.empty()) c.made_tool_calls = true;
    if (o.finish == FinishReason::Stop) {
      u.finish_reason = c.made_tool_calls ? "tool_calls" : "stop";
    } else if (o.finish == FinishReason::Length) {
      u.finish_reason = "length";
    } else {
      // Error, or an abort this session did not ask for (its own aborts finish the choice here
      // first, so their output is never read): the engine stopped, i.e. the server is shutting down.
      const bool aborted = o.finish == FinishReason::Abort;
      u.finish_reason = finish_reason_name(o.finish);
      u.error_status = aborted ? 503 : 500;
      u.error = !o.error.empty() ? o.error
                : aborted        ? "the server is shutting down: the request was stopped before it finished"
                                 : "the engine failed this request";
    }
  }
  if (!u.finish_reason.empty()) finish_choice(c, u.finish_reason);
  if (!u.finish_reason.empty() || !u.tokens.empty() || !u.delta.empty() || !u.prompt_logprobs.empty()) {
    out.push_back(std::move(u));
  }
}

bool GenerationSession::poll(std::chrono::milliseconds wait, std::vector<ChoiceUpdate>& out) {
  size_t before = out.size();
  // First take whatever is ready on any choice, then (if nothing was) block on one of them.
  for (auto& c : choices_) {
    while (!c->finished) {
      auto o = c->channel->pop(std::chrono::milliseconds(0));
      if (!o) break;
      consume(*c, std::move(*o), out);
    }
  }
  if (out.size() == before) {
    auto it = std::find_if(choices_.begin(), choices_.end(), [](const auto& c) { return !c->finished; });
    if (it != choices_.end()) {
      // With several choices, wait in short slices so that none of them waits on another.
      auto slice = choices_.size() > 1 ? std::min(wait, std::chrono::milliseconds(5)) : wait;
      if (auto o = (*it)->channel->pop(slice)) consume(**it, std::move(*o), out);
    }
  }
  return !finished();
}

Usage GenerationSession::usage() const {
  Usage u;
  std::vector<int> cached(req_.prompt_ids.size(), 0);
  for (const auto& c : choices_) {
    u.completion_tokens += c->completion_tokens;
    cached[c->prepared.prompt_index] = std::max(cached[c->prepared.prompt_index], c->cached_tokens);
  }
  for (size_t i = 0; i < req_.prompt_ids.size(); ++i) {
    u.prompt_tokens += static_cast<int>(req_.prompt_ids[i].size());
    u.cached_tokens += cached[i];
  }
  return u;
}

}  // namespace gs::api
