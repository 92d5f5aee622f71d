// Parsing of /v1/chat/completions and /v1/completions bodies, and the 400s of the whole request
// path: types and shapes from the parser, value ranges from the engine's request validation that
// prepare_request runs on every choice.
#include <gtest/gtest.h>

#include "api/api_error.h"
#include "api/openai_request.h"
#include "api/request_error.h"

namespace gs::api {
namespace {

using nlohmann::json;

json chat_body(json extra = json::object()) {
  json b = {{"model", "demo"}, {"messages", {{{"role", "user"}, {"content", "Hi"}}}}};
  for (auto& [k, v] : extra.items()) b[k] = v;
  return b;
}

ApiError chat_error(const json& body) { return gs::testing::request_error(Endpoint::ChatCompletions, body); }
ApiError completion_error(const json& body) { return gs::testing::request_error(Endpoint::Completions, body); }

TEST(OpenAIRequest, ChatDefaults) {
  OpenAIRequest r = parse_chat_request(chat_body());
  EXPECT_EQ(r.endpoint, Endpoint::ChatCompletions);
  EXPECT_EQ(r.model, "demo");
  ASSERT_EQ(r.messages.size(), 1u);
  EXPECT_EQ(r.messages[0]["content"], "Hi");
  EXPECT_FALSE(r.max_tokens);
  EXPECT_FALSE(r.temperature);
  EXPECT_EQ(r.n, 1);
  EXPECT_EQ(r.logprobs, -1);
  EXPECT_FALSE(r.stream);
  EXPECT_TRUE(r.tools.is_null());
}

TEST(OpenAIRequest, ChatSamplingFields) {
  OpenAIRequest r = parse_chat_request(chat_body({{"max_completion_tokens", 7}, {"temperature", 0.5}, {"top_p", 0.9},
                                                  {"top_k", 40}, {"min_p", 0.05}, {"seed", 1234}, {"n", 3},
                                                  {"presence_penalty", 0.5}, {"frequency_penalty", -0.25},
                                                  {"stop", {"a", "bc"}}, {"logprobs", true}, {"top_logprobs", 5},
                                                  {"stream", true}, {"stream_options", {{"include_usage", true}}},
                                                  {"chat_template_kwargs", {{"enable_thinking", true}}},
                                                  {"ignore_eos", true}}));
  EXPECT_EQ(*r.max_tokens, 7);
  EXPECT_DOUBLE_EQ(*r.temperature, 0.5);
  EXPECT_DOUBLE_EQ(*r.top_p, 0.9);
  EXPECT_EQ(*r.top_k, 40);
  EXPECT_DOUBLE_EQ(*r.min_p, 0.05);
  EXPECT_EQ(*r.seed, 1234u);
  EXPECT_EQ(r.n, 3);
  EXPECT_DOUBLE_EQ(r.presence_penalty, 0.5);
  EXPECT_DOUBLE_EQ(r.frequency_penalty, -0.25);
  EXPECT_EQ(r.stop, (std::vector<std::string>{"a", "bc"}));
  EXPECT_EQ(r.logprobs, 5);
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_TRUE(r.enable_thinking);
  EXPECT_TRUE(r.ignore_eos);
}

TEST(OpenAIRequest, NullMeansUnset) {
  OpenAIRequest r = parse_chat_request(chat_body({{"temperature", nullptr}, {"max_tokens", nullptr}, {"stop", nullptr}}));
  EXPECT_FALSE(r.temperature);
  EXPECT_FALSE(r.max_tokens);
  EXPECT_TRUE(r.stop.empty());
}

TEST(OpenAIRequest, StopAsString) {
  EXPECT_EQ(parse_chat_request(chat_body({{"stop", "END"}})).stop, std::vector<std::string>{"END"});
}

TEST(OpenAIRequest, TopKMinusOneIsOff) { EXPECT_EQ(*parse_chat_request(chat_body({{"top_k", -1}})).top_k, 0); }

TEST(OpenAIRequest, IntegralFloatIsAnInteger) {
  EXPECT_EQ(*parse_chat_request(chat_body({{"max_tokens", 16.0}})).max_tokens, 16);
}

struct BadCase {
  const char* name;
  json extra;
  const char* param;
};

TEST(OpenAIRequest, BadValuesNameTheField) {
  std::vector<BadCase> cases = {
      {"temperature type", {{"temperature", "hot"}}, "temperature"},
      {"temperature range", {{"temperature", 2.5}}, "temperature"},
      {"negative temperature", {{"temperature", -0.1}}, "temperature"},
      {"top_p zero", {{"top_p", 0}}, "top_p"},
      {"top_p > 1", {{"top_p", 1.5}}, "top_p"},
      {"top_k", {{"top_k", -2}}, "top_k"},
      {"min_p", {{"min_p", 2}}, "min_p"},
      {"max_tokens zero", {{"max_tokens", 0}}, "max_tokens"},
      {"max_tokens fraction", {{"max_tokens", 1.5}}, "max_tokens"},
      {"max_tokens string", {{"max_tokens", "10"}}, "max_tokens"},
      {"max tokens disagree", {{"max_tokens", 5}, {"max_completion_tokens", 6}}, "max_completion_tokens"},
      {"n zero", {{"n", 0}}, "n"},
      {"n huge", {{"n", 1000}}, "n"},
      {"presence", {{"presence_penalty", 3}}, "presence_penalty"},
      {"frequency", {{"frequency_penalty", "x"}}, "frequency_penalty"},
      {"seed", {{"seed", "abc"}}, "seed"},
      {"stop type", {{"stop", 5}}, "stop"},
      {"stop entry", {{"stop", {"a", 1}}}, "stop"},
      {"empty stop", {{"stop", ""}}, "stop"},
      {"stream type", {{"stream", "yes"}}, "stream"},
      {"stream_options without stream", {{"stream_options", {{"include_usage", true}}}}, "stream_options"},
      {"top_logprobs without logprobs", {{"top_logprobs", 3}}, "top_logprobs"},
      {"top_logprobs range", {{"logprobs", true}, {"top_logprobs", 21}}, "top_logprobs"},
      {"logprobs type", {{"logprobs", 3}}, "logprobs"},
      {"enable_thinking type", {{"chat_template_kwargs", {{"enable_thinking", "yes"}}}}, "chat_template_kwargs.enable_thinking"},
      {"model type", {{"model", 5}}, "model"},
      {"response_format", {{"response_format", {{"type", "json_object"}}}}, "response_format"},
      {"tool_choice required", {{"tool_choice", "required"}}, "tool_choice"},
      {"tool_choice bogus", {{"tool_choice", "sometimes"}}, "tool_choice"},
      {"best_of", {{"best_of", 3}}, "best_of"},
      {"tools shape", {{"tools", {{{"type", "function"}}}}}, "tools"},
      {"max_completion_tokens zero", {{"max_completion_tokens", 0}}, "max_completion_tokens"},
      {"presence below", {{"presence_penalty", -2.5}}, "presence_penalty"},
      {"temperature beyond float", {{"temperature", 1e300}}, "temperature"},
      {"top_k beyond int32", {{"top_k", 1e12}}, "top_k"},
      {"stop_token_ids negative", {{"stop_token_ids", {-1}}}, "stop_token_ids"},
      {"stop_token_ids beyond vocab", {{"stop_token_ids", {99999}}}, "stop_token_ids"},
      {"top_logprobs negative", {{"logprobs", true}, {"top_logprobs", -1}}, "top_logprobs"},
      {"prompt too long", {{"messages", {{{"role", "user"}, {"content", std::string(5000, 'a')}}}}}, "messages"},
  };
  for (const auto& c : cases) {
    ApiError e = chat_error(chat_body(c.extra));
    EXPECT_EQ(e.status(), 400) << c.name;
    EXPECT_EQ(e.param(), c.param) << c.name << ": " << e.what();
    EXPECT_EQ(e.type(), "invalid_request_error") << c.name;
    EXPECT_NE(std::string(e.what()).find(c.param), std::string::npos) << c.name << ": " << e.what();
  }
}

// The parser checks types only: ranges are the request validation's (engine/request_validation.h).
TEST(OpenAIRequest, ParserLeavesRangesToTheValidation) {
  OpenAIRequest r = parse_chat_request(chat_body({{"temperature", 5}, {"top_k", -2}, {"max_tokens", 0}}));
  EXPECT_EQ(*r.temperature, 5);
  EXPECT_EQ(*r.top_k, -2);
  EXPECT_EQ(*r.max_tokens, 0);
  EXPECT_EQ(chat_error(chat_body({{"temperature", 5}, {"top_k", -2}})).param(), "temperature");  // the first
}

// The validation names engine fields; the 400 names the field of the endpoint the client used.
TEST(OpenAIRequest, CompletionErrorsNameTheCompletionField) {
  ApiError e = completion_error({{"prompt", "x"}, {"logprobs", 21}});
  EXPECT_EQ(e.param(), "logprobs");
  EXPECT_NE(std::string(e.what()).find("at most 20"), std::string::npos) << e.what();
  e = completion_error({{"prompt", {1, -2}}});
  EXPECT_EQ(e.param(), "prompt");
  EXPECT_NE(std::string(e.what()).find("token id -2 at position 1"), std::string::npos) << e.what();
  // Of several prompts, the message says which.
  e = completion_error({{"prompt", {{1, 2}, {3, 99999}}}});
  EXPECT_EQ(e.param(), "prompt");
  EXPECT_EQ(std::string(e.what()).rfind("prompt[1]: ", 0), 0u) << e.what();
  // min_tokens over a max_tokens the client never set: the message says where that number came from.
  e = completion_error({{"prompt", "x"}, {"min_tokens", 5000}});
  EXPECT_EQ(e.param(), "min_tokens");
  EXPECT_NE(std::string(e.what()).find("max_tokens was not given"), std::string::npos) << e.what();
}

TEST(OpenAIRequest, BadMessages) {
  std::vector<json> bad = {
      json::array(),                                                    // empty
      json{{{"role", "robot"}, {"content", "x"}}},                      // unknown role
      json{{{"content", "x"}}},                                         // no role
      json{{{"role", "user"}}},                                         // no content
      json{{{"role", "user"}, {"content", 5}}},                         // content type
      json{{{"role", "user"}, {"content", {{{"type", "image_url"}, {"image_url", "x"}}}}}},  // image_url not an object
      json{{{"role", "user"}, {"content", {{{"type", "text"}}}}}},      // text part without text
      json{"hello"},                                                    // not an object
      json{{{"role", "user"}, {"content", "x"}, {"tool_calls", json::array({json::object()})}}},  // user tool call
  };
  for (const auto& m : bad) {
    json b = chat_body();
    b["messages"] = m;
    ApiError e = chat_error(b);
    EXPECT_EQ(e.status(), 400) << m.dump();
    EXPECT_EQ(e.param().rfind("messages", 0), 0u) << m.dump() << " -> " << e.what();
  }
  json b = chat_body();
  b.erase("messages");
  EXPECT_EQ(chat_error(b).param(), "messages");
  EXPECT_NE(std::string(chat_error(chat_body({{"messages", {{{"role", "robot"}, {"content", "x"}}}}})).what()).find("robot"),
            std::string::npos);
}

TEST(OpenAIRequest, ContentPartsAndToolCallsAreNormalized) {
  json b = chat_body();
  b["messages"] = {
      {{"role", "system"}, {"content", {{{"type", "text"}, {"text", "a"}}, {{"type", "text"}, {"text", "b"}}}}},
      {{"role", "user"}, {"content", "weather?"}},
      {{"role", "assistant"}, {"content", nullptr},
       {"tool_calls", {{{"id", "call_1"}, {"type", "function"},
                        {"function", {{"name", "get_weather"}, {"arguments", "{\"city\":\"Paris\"}"}}}}}}},
      {{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "sunny"}},
  };
  b["tools"] = {{{"type", "function"}, {"function", {{"name", "get_weather"}, {"parameters", {{"type", "object"}}}}}}};
  OpenAIRequest r = parse_chat_request(b);
  EXPECT_EQ(r.messages[0]["content"], "a\nb");
  EXPECT_EQ(r.messages[2]["content"], "");
  EXPECT_EQ(r.messages[2]["tool_calls"][0]["function"]["arguments"]["city"], "Paris");
  EXPECT_EQ(r.messages[3]["tool_call_id"], "call_1");
  ASSERT_TRUE(r.tools.is_array());
  EXPECT_EQ(r.tools.size(), 1u);

  b["tool_choice"] = "none";
  EXPECT_TRUE(parse_chat_request(b).tools.is_null());

  b["messages"][2]["tool_calls"][0]["function"]["arguments"] = "{not json";
  EXPECT_EQ(chat_error(b).param(), "messages");
  b["messages"][2]["tool_calls"][0]["function"]["arguments"] = "{\"days\": 1e999}";  // overflows a double
  EXPECT_EQ(chat_error(b).param(), "messages");
}

TEST(OpenAIRequest, CompletionPrompts) {
  OpenAIRequest r = parse_completion_request({{"prompt", "Hello"}, {"echo", true}, {"logprobs", 2}});
  ASSERT_EQ(r.prompts.size(), 1u);
  EXPECT_FALSE(r.prompts[0].is_ids);
  EXPECT_EQ(r.prompts[0].text, "Hello");
  EXPECT_TRUE(r.echo);
  EXPECT_EQ(r.logprobs, 2);

  r = parse_completion_request({{"prompt", {5, 6, 7}}});
  ASSERT_EQ(r.prompts.size(), 1u);
  EXPECT_TRUE(r.prompts[0].is_ids);
  EXPECT_EQ(r.prompts[0].ids, (std::vector<int>{5, 6, 7}));

  r = parse_completion_request({{"prompt", {"a", "b"}}, {"n", 2}});
  EXPECT_EQ(r.prompts.size(), 2u);
  r = parse_completion_request({{"prompt", {{1, 2}, {3}}}});
  EXPECT_EQ(r.prompts.size(), 2u);
  EXPECT_EQ(r.prompts[1].ids, std::vector<int>{3});
}

TEST(OpenAIRequest, BadCompletionPrompts) {
  for (const json& b : {json{{"max_tokens", 3}}, json{{"prompt", 5}}, json{{"prompt", json::array()}},
                        json{{"prompt", {1, -2}}}, json{{"prompt", {1, "x"}}}, json{{"prompt", {"a", 3}}},
                        json{{"prompt", {json::array()}}}, json{{"prompt", "x"}, {"logprobs", true}},
                        json{{"prompt", "x"}, {"logprobs", 50}}, json{{"prompt", "x"}, {"suffix", "y"}}}) {
    ApiError e = completion_error(b);
    EXPECT_EQ(e.status(), 400) << b.dump();
    EXPECT_FALSE(e.param().empty()) << b.dump();
  }
}

TEST(OpenAIRequest, MalformedJsonBody) {
  for (const char* s : {"", "{", "[1,2]", "\"x\"", "{\"a\":}", "nul", "{\"max_tokens\":1e999}"}) {
    try {
      parse_json_body(s);
      ADD_FAILURE() << "accepted " << s;
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status(), 400);
      EXPECT_EQ(e.to_json()["error"]["type"], "invalid_request_error");
    }
  }
  EXPECT_TRUE(parse_json_body("{\"a\":1}").is_object());
}

TEST(OpenAIRequest, ErrorShape) {
  ApiError e = chat_error(chat_body({{"temperature", 9}}));
  json j = e.to_json();
  ASSERT_TRUE(j.contains("error"));
  EXPECT_TRUE(j["error"]["message"].is_string());
  EXPECT_EQ(j["error"]["type"], "invalid_request_error");
  EXPECT_EQ(j["error"]["param"], "temperature");
  EXPECT_TRUE(j["error"].contains("code"));
  json body = error_body(429, "queue full");
  EXPECT_EQ(body["error"]["type"], "rate_limit_error");
  EXPECT_EQ(body["error"]["message"], "queue full");
}

}  // namespace
}  // namespace gs::api
