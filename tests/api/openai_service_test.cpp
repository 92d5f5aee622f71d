// The API service over a scripted engine: what clients get back (text, usage, finish reasons,
// logprobs, SSE chunks) for known token streams.
#include <gtest/gtest.h>

#include "api/api_error.h"
#include "api/fake_tokenizer.h"
#include "api/openai_service.h"
#include "api/scripted_engine.h"

namespace gs::api {
namespace {

using gs::testing::FakeTokenizer;
using gs::testing::ScriptedEngine;
using nlohmann::json;

const char* kTemplate =
    "{{ bos_token }}{% for m in messages %}<|turn>{{ m.role }}\n{{ m.content }}<turn|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|turn>model\n{% endif %}";

class ServiceTest : public ::testing::Test {
 protected:
  std::shared_ptr<FakeTokenizer> tok = std::make_shared<FakeTokenizer>();
  ScriptedEngine engine;
  std::shared_ptr<ServingModel> model;
  std::unique_ptr<OpenAIService> service;

  void SetUp() override {
    GenerationConfig gen;
    gen.eos_token_ids = {tok->id("<eos>"), tok->id("<turn|>")};
    model = std::make_shared<ServingModel>("demo", tok, std::make_shared<ChatTemplate>(kTemplate), gen);
    service = std::make_unique<OpenAIService>(engine, model);
  }
  void emit(const std::string& text, const std::string& final_special = "<turn|>") {
    std::vector<int> ids = tok->ids(text);
    if (!final_special.empty()) ids.push_back(tok->id(final_special));
    engine.script = [ids](const GenerationRequest&) { return ids; };
  }
  json complete(Endpoint e, const json& body) { return service->complete(service->prepare(e, body.dump())); }
  std::vector<json> stream(Endpoint e, const json& body, std::string* raw = nullptr) {
    auto s = service->stream(service->prepare(e, body.dump()));
    std::string text;
    while (s->next(text, std::chrono::milliseconds(10))) {
    }
    if (raw) *raw = text;
    std::vector<json> events;
    size_t pos = 0;
    while (pos < text.size()) {
      size_t end = text.find("\n\n", pos);
      EXPECT_NE(end, std::string::npos);
      std::string ev = text.substr(pos, end - pos);
      EXPECT_EQ(ev.rfind("data: ", 0), 0u) << ev;
      std::string payload = ev.substr(6);
      if (payload != "[DONE]") events.push_back(json::parse(payload));
      else EXPECT_EQ(end + 2, text.size()) << "[DONE] must be last";
      pos = end + 2;
    }
    return events;
  }
  json chat(json extra = json::object()) {
    json b = {{"model", "demo"}, {"messages", {{{"role", "user"}, {"content", "Hi"}}}}};
    for (auto& [k, v] : extra.items()) b[k] = v;
    return b;
  }
};

TEST_F(ServiceTest, ChatNonStreaming) {
  emit("Hello world");
  json r = complete(Endpoint::ChatCompletions, chat());
  EXPECT_EQ(r["object"], "chat.completion");
  EXPECT_EQ(r["model"], "demo");
  EXPECT_EQ(r["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(r["choices"][0]["message"]["content"], "Hello world");
  EXPECT_EQ(r["choices"][0]["finish_reason"], "stop");
  // The prompt the engine got is the rendered template, tokenized without a second <bos>.
  std::vector<int> prompt = tok->encode("<bos><|turn>user\nHi<turn|>\n<|turn>model\n", false);
  ASSERT_EQ(engine.submitted.size(), 1u);
  EXPECT_EQ(engine.submitted[0].prompt, prompt);
  EXPECT_EQ(r["usage"]["prompt_tokens"], prompt.size());
  EXPECT_EQ(r["usage"]["completion_tokens"], 3);  // "Hello", " world", "<turn|>"
  EXPECT_EQ(r["usage"]["total_tokens"], prompt.size() + 3);
  // EOS ids of generation_config reach the engine.
  const auto& stops = engine.submitted[0].sampling.stop_token_ids;
  EXPECT_NE(std::find(stops.begin(), stops.end(), tok->id("<turn|>")), stops.end());
}

TEST_F(ServiceTest, LengthFinish) {
  emit("abcdefghij", "");
  json r = complete(Endpoint::Completions, {{"prompt", "Hi"}, {"max_tokens", 4}});
  EXPECT_EQ(r["object"], "text_completion");
  EXPECT_EQ(r["choices"][0]["text"], "abcd");
  EXPECT_EQ(r["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(r["usage"]["completion_tokens"], 4);
  // Completions add BOS as the tokenizer asks.
  EXPECT_EQ(r["usage"]["prompt_tokens"], 3);
}

TEST_F(ServiceTest, StopStringAbortsTheEngineRequest) {
  emit("one two three four");
  json r = complete(Endpoint::Completions, {{"prompt", "x"}, {"stop", {"three"}}, {"max_tokens", 50}});
  EXPECT_EQ(r["choices"][0]["text"], "one two ");
  EXPECT_EQ(r["choices"][0]["finish_reason"], "stop");
  // Tokens up to the one that completed the stop string count.
  EXPECT_EQ(r["usage"]["completion_tokens"], static_cast<int>(std::string("one two three").size()));
  EXPECT_EQ(engine.aborted.count(engine.submitted[0].id), 1u);
}

TEST_F(ServiceTest, ReasoningContentIsSeparate) {
  std::vector<int> ids = {tok->id("<|channel>"), tok->id("thought")};
  for (int id : tok->ids("\nplan")) ids.push_back(id);
  ids.push_back(tok->id("<channel|>"));
  for (int id : tok->ids("Answer")) ids.push_back(id);
  engine.script = [ids](const GenerationRequest&) { return ids; };
  json r = complete(Endpoint::ChatCompletions, chat());
  EXPECT_EQ(r["choices"][0]["message"]["content"], "Answer");
  EXPECT_EQ(r["choices"][0]["message"]["reasoning_content"], "plan");

  auto events = stream(Endpoint::ChatCompletions, chat({{"stream", true}}));
  std::string content, reasoning;
  for (const auto& e : events) {
    const json& d = e["choices"][0]["delta"];
    if (d.contains("content")) content += d["content"].get<std::string>();
    if (d.contains("reasoning_content")) reasoning += d["reasoning_content"].get<std::string>();
  }
  EXPECT_EQ(content, "Answer");
  EXPECT_EQ(reasoning, "plan");
}

TEST_F(ServiceTest, ToolCallsWhenToolsGiven) {
  std::vector<int> ids = {tok->id("<|tool_call>")};
  for (int id : tok->ids("call:get_weather{city:")) ids.push_back(id);
  ids.push_back(tok->id("<|\"|>"));
  for (int id : tok->ids("Paris")) ids.push_back(id);
  ids.push_back(tok->id("<|\"|>"));
  for (int id : tok->ids("}")) ids.push_back(id);
  ids.push_back(tok->id("<tool_call|>"));
  ids.push_back(tok->id("<turn|>"));
  engine.script = [ids](const GenerationRequest&) { return ids; };
  json tools = {{{"type", "function"}, {"function", {{"name", "get_weather"}, {"parameters", {{"type", "object"}}}}}}};
  json r = complete(Endpoint::ChatCompletions, chat({{"tools", tools}}));
  const json& msg = r["choices"][0]["message"];
  EXPECT_EQ(r["choices"][0]["finish_reason"], "tool_calls");
  EXPECT_TRUE(msg["content"].is_null());
  ASSERT_EQ(msg["tool_calls"].size(), 1u);
  EXPECT_EQ(msg["tool_calls"][0]["type"], "function");
  EXPECT_EQ(msg["tool_calls"][0]["function"]["name"], "get_weather");
  EXPECT_EQ(json::parse(msg["tool_calls"][0]["function"]["arguments"].get<std::string>()), (json{{"city", "Paris"}}));
}

TEST_F(ServiceTest, StreamingChatChunksAndUsage) {
  emit("Hello world");
  std::string raw;
  auto events = stream(Endpoint::ChatCompletions,
                       chat({{"stream", true}, {"stream_options", {{"include_usage", true}}}}), &raw);
  ASSERT_GE(events.size(), 3u);
  EXPECT_EQ(events[0]["object"], "chat.completion.chunk");
  EXPECT_EQ(events[0]["choices"][0]["delta"]["role"], "assistant");
  std::string content;
  std::string finish;
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    const json& c = events[i]["choices"][0];
    EXPECT_TRUE(events[i]["usage"].is_null());
    if (c["delta"].contains("content")) content += c["delta"]["content"].get<std::string>();
    if (!c["finish_reason"].is_null()) finish = c["finish_reason"];
  }
  EXPECT_EQ(content, "Hello world");
  EXPECT_EQ(finish, "stop");
  const json& last = events.back();
  EXPECT_TRUE(last["choices"].empty());
  EXPECT_EQ(last["usage"]["completion_tokens"], 3);
  EXPECT_EQ(raw.substr(raw.size() - 14), "data: [DONE]\n\n");
}

TEST_F(ServiceTest, StreamingSendsOneChunkPerTokenEvenWithoutText) {
  // A special token that is skipped, an id beyond the tokenizer's vocabulary (dummy weights with
  // a smaller tokenizer) and the EOS token show no text, but each is a generated token: each
  // gets its own chunk (content ""), as vLLM streams, so clients can time every token.
  std::vector<int> ids = {tok->id("H"), tok->id("<|turn>"), tok->vocab_size() + 1000, tok->id("i"), tok->id("<turn|>")};
  engine.script = [ids](const GenerationRequest&) { return ids; };
  for (Endpoint e : {Endpoint::ChatCompletions, Endpoint::Completions}) {
    json body = e == Endpoint::ChatCompletions ? chat() : json{{"prompt", "x"}};
    body["stream"] = true;
    body["stream_options"] = {{"include_usage", true}};
    auto events = stream(e, body);
    std::vector<std::string> texts;
    for (const auto& ev : events) {
      if (ev["choices"].empty()) continue;  // usage
      const json& c = ev["choices"][0];
      if (e == Endpoint::ChatCompletions && c["delta"].contains("role")) {
        EXPECT_EQ(texts.size(), 0u) << "the role chunk comes first";
        continue;
      }
      texts.push_back(e == Endpoint::ChatCompletions ? c["delta"]["content"].get<std::string>() : c["text"].get<std::string>());
    }
    EXPECT_EQ(texts, (std::vector<std::string>{"H", "", "", "i", ""}));
    EXPECT_EQ(events.back()["usage"]["completion_tokens"], static_cast<int>(texts.size()));
  }
}

TEST_F(ServiceTest, StreamingStopStringNeverLeaks) {
  emit("say STOP now");
  auto events = stream(Endpoint::Completions, {{"prompt", "x"}, {"stream", true}, {"stop", "STOP"}, {"max_tokens", 40}});
  std::string text;
  for (const auto& e : events) text += e["choices"][0]["text"].get<std::string>();
  EXPECT_EQ(text, "say ");
  EXPECT_EQ(events.back()["choices"][0]["finish_reason"], "stop");
}

TEST_F(ServiceTest, NChoicesWithSeeds) {
  emit("ab");
  json r = complete(Endpoint::Completions, {{"prompt", "x"}, {"n", 3}, {"seed", 7}, {"max_tokens", 5}});
  ASSERT_EQ(r["choices"].size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(r["choices"][i]["index"], i);
  ASSERT_EQ(engine.submitted.size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(*engine.submitted[i].sampling.seed, 7u + i);
  EXPECT_EQ(r["usage"]["completion_tokens"], 3 * 3);  // "a", "b", "<turn|>" each
  EXPECT_EQ(r["usage"]["prompt_tokens"], 2);           // counted once, not per choice
}

TEST_F(ServiceTest, DefaultsFromGenerationConfig) {
  emit("a");
  GenerationConfig gen;
  gen.do_sample = true;
  gen.temperature = 0.7f;
  gen.top_k = 64;
  gen.top_p = 0.95f;
  gen.eos_token_ids = {1};
  auto m = std::make_shared<ServingModel>("demo", tok, nullptr, gen);
  OpenAIService svc(engine, m);
  svc.complete(svc.prepare(Endpoint::Completions, R"({"prompt":"x"})"));
  const SamplingParams& s = engine.submitted.back().sampling;
  EXPECT_FLOAT_EQ(s.temperature, 0.7f);
  EXPECT_EQ(s.top_k, 64);
  EXPECT_FLOAT_EQ(s.top_p, 0.95f);
  EXPECT_EQ(s.max_tokens, engine.max_len - 2);  // whatever fits after the prompt
  svc.complete(svc.prepare(Endpoint::Completions, R"({"prompt":"x","temperature":0,"top_k":5})"));
  EXPECT_FLOAT_EQ(engine.submitted.back().sampling.temperature, 0.f);
  EXPECT_EQ(engine.submitted.back().sampling.top_k, 5);
  // Without a chat template, chat is refused clearly.
  EXPECT_THROW(svc.prepare(Endpoint::ChatCompletions, chat().dump()), ApiError);
}

TEST_F(ServiceTest, PromptTooLongSaysBothNumbers) {
  engine.max_len = 8;
  try {
    service->prepare(Endpoint::Completions, R"({"prompt":"0123456789"})");
    FAIL();
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 400);
    EXPECT_NE(std::string(e.what()).find("11 tokens"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(" 8 "), std::string::npos) << e.what();
  }
  try {
    service->prepare(Endpoint::Completions, R"({"prompt":"012","max_tokens":10})");
    FAIL();
  } catch (const ApiError& e) {
    EXPECT_EQ(e.param(), "max_tokens");
    EXPECT_NE(std::string(e.what()).find("10"), std::string::npos);
  }
}

TEST_F(ServiceTest, BadTokenIdsAndWrongModel) {
  EXPECT_THROW(service->prepare(Endpoint::Completions, R"({"prompt":[1, 99999]})"), ApiError);
  EXPECT_THROW(service->prepare(Endpoint::Completions, R"({"prompt":"x","stop_token_ids":[99999]})"), ApiError);
  try {
    service->prepare(Endpoint::Completions, R"({"model":"gpt-4","prompt":"x"})");
    FAIL();
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 404);
  }
}

// Should the engine refuse what the API layer let through, its 400 still names the client's field.
TEST_F(ServiceTest, EngineRefusalNamesTheEndpointsField) {
  engine.refusal = {false, 400, "logprobs: must be at most 20, got 21", "logprobs"};
  try {
    complete(Endpoint::ChatCompletions, chat({{"logprobs", true}, {"top_logprobs", 2}}));
    FAIL();
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 400);
    EXPECT_EQ(e.param(), "top_logprobs");
    EXPECT_STREQ(e.what(), "top_logprobs: must be at most 20, got 21");
  }
}

TEST_F(ServiceTest, QueueFullIs429AndAbortsSiblings) {
  emit("a");
  engine.queue_limit = 2;
  try {
    complete(Endpoint::Completions, {{"prompt", "x"}, {"n", 3}});
    FAIL();
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 429);
    EXPECT_EQ(e.to_json()["error"]["type"], "rate_limit_error");
  }
  EXPECT_EQ(engine.aborted.size(), 2u);  // the two that got in are taken back
}

TEST_F(ServiceTest, CompletionLogprobsAndEcho) {
  emit("ab", "");
  json r = complete(Endpoint::Completions, {{"prompt", "Hi"}, {"max_tokens", 2}, {"logprobs", 2}, {"echo", true}});
  EXPECT_EQ(r["choices"][0]["text"], "Hiab");
  const json& lp = r["choices"][0]["logprobs"];
  EXPECT_EQ(lp["tokens"], (json{"a", "b"}));  // the scripted engine sends no prompt logprobs
  EXPECT_EQ(lp["token_logprobs"].size(), 2u);
  EXPECT_EQ(lp["top_logprobs"][0].size(), 2u);
  EXPECT_EQ(lp["text_offset"], (json{0, 1}));
}

TEST_F(ServiceTest, ChatLogprobs) {
  emit("ab", "");
  json r = complete(Endpoint::ChatCompletions, chat({{"max_tokens", 2}, {"logprobs", true}, {"top_logprobs", 1}}));
  const json& content = r["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(content.size(), 2u);
  EXPECT_EQ(content[0]["token"], "a");
  EXPECT_EQ(content[0]["bytes"], (json{97}));
  EXPECT_EQ(content[0]["top_logprobs"].size(), 1u);
}

TEST_F(ServiceTest, TokenizeAndDetokenize) {
  json t = service->tokenize(R"({"prompt":"Hello world"})");
  EXPECT_EQ(t["tokens"], (json{tok->bos_id(), tok->id("Hello"), tok->id(" world")}));
  EXPECT_EQ(t["count"], 3);
  json d = service->detokenize(json{{"tokens", t["tokens"]}}.dump());
  EXPECT_EQ(d["prompt"], "<bos>Hello world");
  json plain = service->detokenize(json{{"tokens", t["tokens"]}, {"skip_special_tokens", true}}.dump());
  EXPECT_EQ(plain["prompt"], "Hello world");
  json c = service->tokenize(R"({"messages":[{"role":"user","content":"Hi"}]})");
  EXPECT_EQ(c["tokens"], json(tok->encode("<bos><|turn>user\nHi<turn|>\n<|turn>model\n", false)));
  EXPECT_THROW(service->detokenize(R"({"tokens":[-1]})"), ApiError);
  EXPECT_THROW(service->tokenize(R"({})"), ApiError);
}

// The engine stopping a request (shutdown: the drain timed out, or --shutdown-timeout 0) is not
// a result: a plain request is a 503 error, a stream ends with an error event; neither says
// finish_reason "abort", which is no OpenAI value.
TEST_F(ServiceTest, EngineAbortIsA503NotAFinishReason) {
  emit("Hello world", "");
  engine.end_with = FinishReason::Abort;
  for (Endpoint e : {Endpoint::ChatCompletions, Endpoint::Completions}) {
    json body = e == Endpoint::ChatCompletions ? chat({{"max_tokens", 50}}) : json{{"prompt", "x"}, {"max_tokens", 50}};
    try {
      complete(e, body);
      FAIL() << "an aborted request must not answer 200";
    } catch (const ApiError& err) {
      EXPECT_EQ(err.status(), 503);
      EXPECT_EQ(err.to_json()["error"]["type"], "service_unavailable_error");
      EXPECT_NE(std::string(err.what()).find("shutting down"), std::string::npos) << err.what();
    }

    body["stream"] = true;
    body["stream_options"] = {{"include_usage", true}};
    std::string raw;
    std::vector<json> events = stream(e, body, &raw);
    EXPECT_EQ(raw.find("\"abort\""), std::string::npos) << raw;
    ASSERT_GE(events.size(), 2u) << raw;
    // What was generated reached the client, then the usage, then the error, last before [DONE].
    std::string text;
    for (const json& ev : events) {
      if (!ev.contains("choices") || ev["choices"].empty()) continue;
      const json& c = ev["choices"][0];
      EXPECT_TRUE(c["finish_reason"].is_null()) << ev;
      if (c.contains("delta") && c["delta"].contains("content")) text += c["delta"]["content"].get<std::string>();
      if (c.contains("text")) text += c["text"].get<std::string>();
    }
    EXPECT_EQ(text, "Hello world");
    EXPECT_EQ(events[events.size() - 2]["usage"]["completion_tokens"], 2);
    const json& err = events.back();
    ASSERT_TRUE(err.contains("error")) << err;
    EXPECT_EQ(err["error"]["code"], 503);
    EXPECT_EQ(err["error"]["type"], "service_unavailable_error");
    EXPECT_TRUE(err["error"]["message"].is_string());
  }
}

// An engine failure: 500, and no finish_reason "error" in the stream either.
TEST_F(ServiceTest, EngineErrorIsA500) {
  emit("Hi", "");
  engine.end_with = FinishReason::Error;
  engine.end_error = "the device fell over";
  try {
    complete(Endpoint::Completions, {{"prompt", "x"}, {"max_tokens", 50}});
    FAIL();
  } catch (const ApiError& err) {
    EXPECT_EQ(err.status(), 500);
    EXPECT_STREQ(err.what(), "the device fell over");
  }
  std::string raw;
  std::vector<json> events = stream(Endpoint::Completions, {{"prompt", "x"}, {"max_tokens", 50}, {"stream", true}}, &raw);
  EXPECT_EQ(raw.find("\"error\"}"), std::string::npos) << "no finish_reason \"error\": " << raw;
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back()["error"]["code"], 500);
  EXPECT_EQ(events.back()["error"]["message"], "the device fell over");
}

// The server cancelling a stream (it stops while the stream runs): the request is aborted in the
// engine and the client is told so by an error event, not a bare [DONE].
TEST_F(ServiceTest, CancelledStreamEndsWithAnErrorEvent) {
  emit("abc", "");
  engine.end_with = FinishReason::None;  // the scripted request never ends by itself
  auto s = service->stream(service->prepare(Endpoint::Completions, R"({"prompt":"x","max_tokens":50,"stream":true})"));
  std::string text;
  ASSERT_TRUE(s->next(text, std::chrono::milliseconds(10)));
  s->cancel(503, "the server is shutting down");
  while (s->next(text, std::chrono::milliseconds(10))) {
  }
  EXPECT_EQ(engine.aborted.count(engine.submitted[0].id), 1u);
  const std::string tail = "data: [DONE]\n\n";
  ASSERT_GE(text.size(), tail.size());
  EXPECT_EQ(text.substr(text.size() - tail.size()), tail);
  size_t ev = text.rfind("data: {", text.size() - tail.size());
  ASSERT_NE(ev, std::string::npos);
  json err = json::parse(text.substr(ev + 6, text.size() - tail.size() - ev - 8));
  EXPECT_EQ(err["error"]["code"], 503);
  EXPECT_EQ(err["error"]["message"], "the server is shutting down");
  EXPECT_EQ(text.find("\"abort\""), std::string::npos) << text;
}

TEST_F(ServiceTest, ModelsList) {
  json m = service->models();
  EXPECT_EQ(m["object"], "list");
  EXPECT_EQ(m["data"][0]["id"], "demo");
  // models.retrieve: the same object for the served name, 404 model_not_found for any other.
  EXPECT_EQ(service->model("demo"), m["data"][0]);
  try {
    service->model("other");
    FAIL() << "no error for an unknown model";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 404);
    EXPECT_EQ(e.code(), "model_not_found");
    EXPECT_EQ(e.param(), "model");
  }
}

}  // namespace
}  // namespace gs::api
