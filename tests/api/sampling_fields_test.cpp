// The request fields of issue 28: repetition_penalty, min_tokens, include_stop_str_in_output,
// logit_bias and reasoning_effort are honoured (parsed, range-checked, handed to the engine, and
// where the API layer acts on them, acting); vLLM-only fields we cannot honour are refused with a
// 400 naming them; fields that cannot change the output and unknown fields are accepted.
#include <gtest/gtest.h>

#include "api/api_error.h"
#include "api/fake_tokenizer.h"
#include "api/openai_request.h"
#include "api/openai_service.h"
#include "api/request_error.h"
#include "api/request_fields.h"
#include "api/scripted_engine.h"

namespace gs::api {
namespace {

using gs::testing::FakeTokenizer;
using gs::testing::ScriptedEngine;
using nlohmann::json;

json chat_body(json extra = json::object()) {
  json b = {{"model", "demo"}, {"messages", {{{"role", "user"}, {"content", "Hi"}}}}};
  for (auto& [k, v] : extra.items()) b[k] = v;
  return b;
}

// The 400 a parse or a prepare throws, or a failure when none.
template <class F>
ApiError error_of(F&& f, const std::string& what) {
  try {
    f();
  } catch (const ApiError& e) {
    return e;
  }
  ADD_FAILURE() << "no error for " << what;
  return ApiError(0, "", "");
}

// Through the whole path before the engine: the parser refuses types and unsupported fields, the
// request validation of the prepared choices refuses values out of range.
void expect_refused(const json& body, const std::string& param, const std::string& what) {
  ApiError e = gs::testing::request_error(Endpoint::ChatCompletions, body);
  EXPECT_EQ(e.status(), 400) << what;
  EXPECT_EQ(e.param(), param) << what << ": " << e.what();
  EXPECT_NE(std::string(e.what()).find(param), std::string::npos) << what << ": " << e.what();
}

TEST(SamplingFields, ParsedWithTheirDefaults) {
  OpenAIRequest d = parse_chat_request(chat_body());
  EXPECT_EQ(d.repetition_penalty, 1.0);
  EXPECT_EQ(d.min_tokens, 0);
  EXPECT_FALSE(d.include_stop_str_in_output);
  EXPECT_TRUE(d.logit_bias.empty());
  RequestJson body = chat_body({{"repetition_penalty", 1.3}, {"min_tokens", 4}, {"include_stop_str_in_output", true}});
  body["logit_bias"] = RequestJson::parse(R"({"17": 5, "3": -100, "017": 2.5})");  // in this order
  OpenAIRequest r = parse_chat_request(body);
  EXPECT_DOUBLE_EQ(r.repetition_penalty, 1.3);
  EXPECT_EQ(r.min_tokens, 4);
  EXPECT_TRUE(r.include_stop_str_in_output);
  // "17" and "017" name one token: the later value wins, as in vLLM's dict of int keys.
  EXPECT_EQ(r.logit_bias, (std::vector<std::pair<int, float>>{{17, 2.5f}, {3, -100.f}}));
}

TEST(SamplingFields, OutOfRangeValuesAre400NamingTheField) {
  struct Case {
    json extra;
    const char* param;
  };
  const std::vector<Case> cases = {
      {{{"repetition_penalty", 0}}, "repetition_penalty"},
      {{{"repetition_penalty", -1}}, "repetition_penalty"},
      {{{"repetition_penalty", 10.5}}, "repetition_penalty"},
      {{{"repetition_penalty", "high"}}, "repetition_penalty"},
      {{{"min_tokens", -1}}, "min_tokens"},
      {{{"min_tokens", 1.5}}, "min_tokens"},
      {{{"include_stop_str_in_output", "yes"}}, "include_stop_str_in_output"},
      {{{"logit_bias", {1, 2}}}, "logit_bias"},
      {{{"logit_bias", {{"abc", 1}}}}, "logit_bias"},
      {{{"logit_bias", {{"-3", 1}}}}, "logit_bias"},
      {{{"logit_bias", {{"99999999999", 1}}}}, "logit_bias"},
      {{{"logit_bias", {{"5", 100.5}}}}, "logit_bias"},
      {{{"logit_bias", {{"5", -101}}}}, "logit_bias"},
      {{{"logit_bias", {{"5", "1"}}}}, "logit_bias"},
      {{{"reasoning_effort", "extreme"}}, "reasoning_effort"},
      {{{"reasoning_effort", 3}}, "reasoning_effort"},
      {{{"reasoning_effort", "none"}, {"chat_template_kwargs", {{"enable_thinking", true}}}}, "reasoning_effort"},
  };
  for (const auto& c : cases) expect_refused(chat_body(c.extra), c.param, c.extra.dump());
}

TEST(SamplingFields, ReasoningEffortSetsTheThinkingSwitch) {
  EXPECT_FALSE(parse_chat_request(chat_body({{"reasoning_effort", "none"}})).enable_thinking);
  for (const char* e : {"low", "medium", "high"}) {
    OpenAIRequest r = parse_chat_request(chat_body({{"reasoning_effort", e}}));
    EXPECT_TRUE(r.enable_thinking) << e;
    EXPECT_EQ(r.reasoning_effort, e);
  }
  // Agreeing with enable_thinking is fine.
  EXPECT_TRUE(parse_chat_request(chat_body({{"reasoning_effort", "high"},
                                            {"chat_template_kwargs", {{"enable_thinking", true}}}}))
                  .enable_thinking);
}

// vLLM fields this server cannot honour: refused when set to anything but their no-op value.
TEST(SamplingFields, UnsupportedVllmFieldsAreRefused) {
  const std::vector<std::pair<json, const char*>> cases = {
      {{{"use_beam_search", true}}, "use_beam_search"},
      {{{"length_penalty", 0.8}}, "length_penalty"},
      {{{"guided_json", {{"type", "object"}}}}, "guided_json"},
      {{{"guided_choice", {"a", "b"}}}, "guided_choice"},
      {{{"structured_outputs", {{"regex", "a+"}}}}, "structured_outputs"},
      {{{"allowed_token_ids", {1, 2}}}, "allowed_token_ids"},
      {{{"bad_words", {"x"}}}, "bad_words"},
      {{{"truncate_prompt_tokens", 10}}, "truncate_prompt_tokens"},
      {{{"prompt_logprobs", 1}}, "prompt_logprobs"},
      {{{"chat_template", "{{ messages }}"}}, "chat_template"},
      {{{"add_generation_prompt", false}}, "add_generation_prompt"},
      {{{"continue_final_message", true}}, "continue_final_message"},
      {{{"echo", true}}, "echo"},
      {{{"return_tokens_as_token_ids", true}}, "return_tokens_as_token_ids"},
      {{{"cache_salt", "tenant-a"}}, "cache_salt"},
      {{{"verbosity", "low"}}, "verbosity"},
  };
  for (const auto& [extra, param] : cases) expect_refused(chat_body(extra), param, extra.dump());
  // Their no-op values are accepted.
  EXPECT_NO_THROW(parse_chat_request(chat_body({{"use_beam_search", false},
                                                {"length_penalty", 1},
                                                {"allowed_token_ids", json::array()},
                                                {"add_generation_prompt", true},
                                                {"echo", false}})));
}

TEST(SamplingFields, FieldsWithoutEffectAndUnknownFieldsAreAccepted) {
  EXPECT_NO_THROW(parse_chat_request(chat_body({{"user", "u-1"},
                                                {"metadata", {{"team", "a"}}},
                                                {"store", false},
                                                {"service_tier", "auto"},
                                                {"parallel_tool_calls", true},
                                                {"prompt_cache_key", "k"},
                                                {"safety_identifier", "s"},
                                                {"priority", 3},
                                                {"spaces_between_special_tokens", true}})));
  // Their type is still checked, as OpenAI checks it.
  expect_refused(chat_body({{"user", 5}}), "user", "user: 5");
  expect_refused(chat_body({{"store", "no"}}), "store", "store: \"no\"");
  // Unknown: accepted (and logged once per name).
  EXPECT_FALSE(is_known_field("temprature", Endpoint::ChatCompletions));
  EXPECT_NO_THROW(parse_chat_request(chat_body({{"temprature", 0.5}, {"x_custom", {1, 2}}})));
  EXPECT_NO_THROW(parse_chat_request(chat_body({{"temprature", 0.7}})));
  // Logged once per name for the process: a name seen before is not logged again.
  static int run = 0;  // the set lives as long as the process: a fresh name per run (--gtest_repeat)
  const std::string fresh = "unknown_" + std::to_string(++run);
  EXPECT_EQ(note_unknown_fields(chat_body({{"temprature", 1}, {fresh, 1}}), Endpoint::ChatCompletions),
            std::vector<std::string>{fresh});
  EXPECT_TRUE(note_unknown_fields(chat_body({{fresh, 2}}), Endpoint::ChatCompletions).empty());
  EXPECT_NO_THROW(parse_completion_request({{"prompt", "x"}, {"messages_extra", 1}}));
  EXPECT_TRUE(is_known_field("min_tokens", Endpoint::Completions));
  EXPECT_TRUE(is_known_field("reasoning_effort", Endpoint::ChatCompletions));
  EXPECT_FALSE(is_known_field("reasoning_effort", Endpoint::Completions));
}

// ---- through the service: what reaches the engine, and what the API layer does itself -----------

const char* kPlainTemplate =
    "{{ bos_token }}{% for m in messages %}<|turn>{{ m.role }}\n{{ m.content }}<turn|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|turn>model\n{% endif %}";
const char* kThinkingTemplate =
    "{{ bos_token }}{% if enable_thinking %}<|think|>{% endif %}{% for m in messages %}<|turn>{{ m.role }}\n"
    "{{ m.content }}<turn|>\n{% endfor %}{% if add_generation_prompt %}<|turn>model\n{% endif %}";

class SamplingService : public ::testing::Test {
 protected:
  std::shared_ptr<FakeTokenizer> tok = std::make_shared<FakeTokenizer>();
  ScriptedEngine engine;
  std::shared_ptr<ServingModel> model;
  std::unique_ptr<OpenAIService> service;

  void use_template(const char* source) {
    GenerationConfig gen;
    gen.eos_token_ids = {tok->id("<eos>"), tok->id("<turn|>")};
    model = std::make_shared<ServingModel>("demo", tok, std::make_shared<ChatTemplate>(source), gen);
    service = std::make_unique<OpenAIService>(engine, model);
  }
  void SetUp() override { use_template(kPlainTemplate); }
  void emit(const std::string& text) {
    std::vector<int> ids = tok->ids(text);
    engine.script = [ids](const GenerationRequest&) { return ids; };
  }
  json complete(Endpoint e, const json& body) { return service->complete(service->prepare(e, body.dump())); }
  std::string streamed_text(const json& body) {
    auto s = service->stream(service->prepare(Endpoint::Completions, body.dump()));
    std::string raw, text;
    while (s->next(raw, std::chrono::milliseconds(10))) {
    }
    for (size_t pos = 0; (pos = raw.find("data: {", pos)) != std::string::npos; ++pos) {
      json ev = json::parse(raw.substr(pos + 6, raw.find("\n\n", pos) - pos - 6));
      text += ev["choices"][0]["text"].get<std::string>();
    }
    return text;
  }
  ApiError prepare_error(Endpoint e, const json& body) {
    return error_of([&] { service->prepare(e, body.dump()); }, body.dump());
  }
};

TEST_F(SamplingService, EngineGetsPenaltyBiasAndMinTokens) {
  emit("ab");
  complete(Endpoint::Completions, {{"prompt", "x"},
                                   {"max_tokens", 8},
                                   {"repetition_penalty", 1.25},
                                   {"min_tokens", 3},
                                   {"logit_bias", {{std::to_string(tok->id("a")), 7}}}});
  ASSERT_EQ(engine.submitted.size(), 1u);
  const SamplingParams& s = engine.submitted[0].sampling;
  EXPECT_FLOAT_EQ(s.repetition_penalty, 1.25f);
  EXPECT_EQ(s.min_tokens, 3);
  EXPECT_EQ(s.logit_bias, (std::vector<std::pair<int, float>>{{tok->id("a"), 7.f}}));
}

TEST_F(SamplingService, LogitBiasIdsAndMinTokensAreCheckedAgainstTheModel) {
  ApiError e = prepare_error(Endpoint::Completions, {{"prompt", "x"}, {"logit_bias", {{"99999", 1}}}});
  EXPECT_EQ(e.status(), 400);
  EXPECT_EQ(e.param(), "logit_bias");
  e = prepare_error(Endpoint::Completions, {{"prompt", "x"}, {"max_tokens", 4}, {"min_tokens", 5}});
  EXPECT_EQ(e.status(), 400);
  EXPECT_EQ(e.param(), "min_tokens");
}

TEST_F(SamplingService, IncludeStopStrInOutputKeepsTheStopString) {
  emit("say STOP now");
  json body = {{"prompt", "x"}, {"stop", "STOP"}, {"max_tokens", 40}};
  EXPECT_EQ(complete(Endpoint::Completions, body)["choices"][0]["text"], "say ");
  body["include_stop_str_in_output"] = true;
  json r = complete(Endpoint::Completions, body);
  EXPECT_EQ(r["choices"][0]["text"], "say STOP");
  EXPECT_EQ(r["choices"][0]["finish_reason"], "stop");
  body["stream"] = true;
  EXPECT_EQ(streamed_text(body), "say STOP");
}

// As vLLM: a stop string only counts in the text of tokens after the first min_tokens.
TEST_F(SamplingService, MinTokensDefersStopStrings) {
  emit("a.b.c.d");  // one token per character
  json body = {{"prompt", "x"}, {"stop", "."}, {"max_tokens", 40}};
  EXPECT_EQ(complete(Endpoint::Completions, body)["choices"][0]["text"], "a");
  body["min_tokens"] = 2;  // the "." of token 2 does not count, the one of token 4 does
  EXPECT_EQ(complete(Endpoint::Completions, body)["choices"][0]["text"], "a.b");
  body["min_tokens"] = 4;
  EXPECT_EQ(complete(Endpoint::Completions, body)["choices"][0]["text"], "a.b.c");
  body["stream"] = true;
  EXPECT_EQ(streamed_text(body), "a.b.c");
  body["include_stop_str_in_output"] = true;
  EXPECT_EQ(streamed_text(body), "a.b.c.");
}

TEST_F(SamplingService, ReasoningEffortNeedsATemplateWithAThinkingSwitch) {
  emit("ok");
  ApiError e = prepare_error(Endpoint::ChatCompletions, chat_body({{"reasoning_effort", "high"}}));
  EXPECT_EQ(e.status(), 400);
  EXPECT_EQ(e.param(), "reasoning_effort");

  use_template(kThinkingTemplate);
  auto prompt_of = [&](const json& body) {
    engine.submitted.clear();
    complete(Endpoint::ChatCompletions, body);
    return tok->decode(engine.submitted.at(0).prompt, false);
  };
  EXPECT_EQ(prompt_of(chat_body({{"reasoning_effort", "high"}})).find("<bos><|think|>"), 0u);
  EXPECT_EQ(prompt_of(chat_body({{"reasoning_effort", "none"}})).find("<|think|>"), std::string::npos);
  EXPECT_EQ(prompt_of(chat_body()).find("<|think|>"), std::string::npos);
}

}  // namespace
}  // namespace gs::api
