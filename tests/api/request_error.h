// The 400 a request body gets on the whole path before the engine: parsed (types, shapes,
// refusals), then prepared (template, tokenizer, and the engine's request validation of every
// choice: ranges, token ids, lengths). For tests that only care which error a body gets.
#pragma once
#include <gtest/gtest.h>

#include <climits>
#include <memory>

#include "api/api_error.h"
#include "api/fake_tokenizer.h"
#include "api/openai_request.h"
#include "api/request_preparer.h"

namespace gs::testing {

// A served model "demo" with the fake tokenizer and a template that prints the messages' text.
inline const api::ServingModel& request_error_model() {
  static const api::ServingModel m("demo", std::make_shared<FakeTokenizer>(),
                                   std::make_shared<ChatTemplate>("{% for m in messages %}{{ m.content }}{% endfor %}"),
                                   GenerationConfig{});
  return m;
}

// The ApiError of `body` on `endpoint`, or a test failure (and a status-0 error) when none.
inline api::ApiError request_error(api::Endpoint endpoint, const api::RequestJson& body) {
  try {
    api::OpenAIRequest r = endpoint == api::Endpoint::ChatCompletions ? api::parse_chat_request(body)
                                                                       : api::parse_completion_request(body);
    api::prepare_request(std::move(r), request_error_model(), RequestLimits{INT32_MAX, 4096, 2048});
  } catch (const api::ApiError& e) {
    return e;
  }
  ADD_FAILURE() << "no error for " << body.dump();
  return api::ApiError(0, "", "");
}

}  // namespace gs::testing
