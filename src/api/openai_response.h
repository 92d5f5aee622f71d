// OpenAI response bodies: whole chat.completion / text_completion objects (non-streaming, built
// by accumulating ChoiceUpdates) and the chunk objects of a stream.
#pragma once
#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

#include "api/generation_session.h"
#include "tokenizer/tokenizer.h"

namespace gs::api {

nlohmann::json usage_json(const Usage& u);

// Logprobs in the shape of each endpoint.
nlohmann::json chat_logprobs_json(const std::vector<TokenLogprob>& lps, const Tokenizer& tok);
// Completions: {tokens, token_logprobs, top_logprobs, text_offset}; `text_offset0` is where the
// first token's text starts in the choice text.
nlohmann::json completion_logprobs_json(const std::vector<TokenLogprob>& lps, const Tokenizer& tok, size_t text_offset0);

// Collects the updates of a non-streaming request and writes the final object.
class ResponseAccumulator {
 public:
  ResponseAccumulator(const PreparedRequest& req, const Tokenizer& tok);
  void add(const ChoiceUpdate& u);
  nlohmann::json finish(const std::string& model_name, const Usage& usage) const;
  // The first choice that ended with an error ("" when none) and the HTTP status it answers with.
  const std::string& error() const { return error_; }
  int error_status() const { return error_status_; }

 private:
  struct Choice {
    std::string text, reasoning;
    std::vector<ParsedToolCall> tool_calls;
    std::vector<TokenLogprob> logprobs, prompt_logprobs;
    std::string finish_reason;
  };
  const PreparedRequest& req_;
  const Tokenizer& tok_;
  std::map<int, Choice> choices_;
  std::string error_;
  int error_status_ = 0;
};

// Streaming: chunk objects ("chat.completion.chunk" / "text_completion").
class ChunkWriter {
 public:
  ChunkWriter(const PreparedRequest& req, const Tokenizer& tok, std::string model_name);
  // The first chunk of every chat choice carries the role (OpenAI sends it with empty content).
  std::vector<nlohmann::json> start() const;
  // Chunks for one update: one whenever it consumed generated tokens (content "" when they show
  // no text yet), a finish reason or logprobs; none otherwise. A choice that ended with an error
  // gets no finish reason (the stream's error event follows).
  std::vector<nlohmann::json> update(const ChoiceUpdate& u);
  // The trailing usage chunk (choices empty) of stream_options.include_usage.
  nlohmann::json usage_chunk(const Usage& usage) const;

 private:
  nlohmann::json base() const;
  const PreparedRequest& req_;
  const Tokenizer& tok_;
  std::string model_;
  std::map<int, size_t> text_offset_;  // completions logprobs text_offset per choice
  std::map<int, int> tool_call_count_;
};

// "data: {...}\n\n" framing of server-sent events.
std::string sse_event(const nlohmann::json& j);
inline constexpr const char* kSseDone = "data: [DONE]\n\n";

}  // namespace gs::api
