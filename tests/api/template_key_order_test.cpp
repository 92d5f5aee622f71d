// Objects reach the chat template in the client's key order: `tojson` of tool parameters and of
// tool-call arguments must print keys as sent, as Python's jinja2 does (dicts keep insertion
// order), not sorted as nlohmann::json would.
#include <gtest/gtest.h>

#include <random>

#include "api/fake_tokenizer.h"
#include "api/openai_request.h"
#include "api/request_preparer.h"

namespace gs::api {
namespace {

std::string render(const std::string& body, const std::string& tmpl) {
  auto model = std::make_shared<ServingModel>("demo", std::make_shared<gs::testing::FakeTokenizer>(),
                                              std::make_shared<ChatTemplate>(tmpl), GenerationConfig{});
  return render_chat_prompt(parse_chat_request(parse_json_body(body)), *model, true);
}

TEST(TemplateKeyOrder, ToolsAndArgumentsKeepTheClientsOrder) {
  // Keys in reverse alphabetical order at every level, so sorting would change every line.
  const std::string body = R"({"model":"demo","messages":[
      {"role":"user","content":"weather?"},
      {"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function",
        "function":{"name":"get_weather","arguments":"{\"zeta\":1,\"alpha\":{\"y\":2,\"b\":[1,{\"q\":1,\"a\":2}]}}"}}]}],
    "tools":[{"type":"function","function":{"name":"get_weather","parameters":
      {"type":"object","properties":{"unit":{"type":"string"},"city":{"type":"string"}},"required":["city"]}}}],
    "chat_template_kwargs":{"zz":1,"aa":2}})";
  const std::string tmpl =
      "{{ tools[0].function.parameters.properties | tojson }}\n"
      "{{ messages[1].tool_calls[0].function.arguments | tojson }}\n"
      "{% for k in tools[0].function.parameters.properties %}{{ k }} {% endfor %}\n"
      "{{ zz }}{{ aa }}";
  // What Python's jinja2 prints in transformers' environment (trim_blocks: no newline after
  // a block tag; tojson is json.dumps without sort_keys).
  EXPECT_EQ(render(body, tmpl),
            "{\"unit\": {\"type\": \"string\"}, \"city\": {\"type\": \"string\"}}\n"
            "{\"zeta\": 1, \"alpha\": {\"y\": 2, \"b\": [1, {\"q\": 1, \"a\": 2}]}}\n"
            "unit city 12");
}

TEST(TemplateKeyOrder, RandomKeyOrdersSurviveParsing) {
  // Fresh random key names and orders: the rendered order is the order written in the body.
  std::mt19937 rng(std::random_device{}());
  for (int round = 0; round < 20; ++round) {
    std::vector<std::string> keys;
    for (int i = 0; i < 6; ++i) keys.push_back("k" + std::to_string(rng() % 100000) + "_" + std::to_string(i));
    std::shuffle(keys.begin(), keys.end(), rng);
    std::string props, expected;
    for (size_t i = 0; i < keys.size(); ++i) {
      props += (i ? "," : "") + ("\"" + keys[i] + "\":{\"type\":\"string\"}");
      expected += keys[i] + " ";
    }
    const std::string body = R"({"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function",)"
                             R"("function":{"name":"f","parameters":{"type":"object","properties":{)" +
                             props + "}}}}]}";
    EXPECT_EQ(render(body, "{% for k in tools[0].function.parameters.properties %}{{ k }} {% endfor %}"), expected);
  }
}

}  // namespace
}  // namespace gs::api
