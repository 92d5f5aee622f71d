// chat_template_kwargs carries the template's own switches (enable_thinking, ...) and nothing
// else: a kwarg named like an input the server builds from the validated request (messages,
// tools, add_generation_prompt, the special tokens) or like a Jinja global or block variable
// (range, namespace, loop, ...) would replace it, so it is refused with a 400 naming the key.
#include <gtest/gtest.h>

#include "api/api_error.h"
#include "api/fake_tokenizer.h"
#include "api/openai_request.h"
#include "api/request_preparer.h"

namespace gs::api {
namespace {

using nlohmann::json;

// Prints what the injection would change: the conversation, the special tokens, the flags and
// the output of the globals.
const char* kTemplate =
    "{{ bos_token }}{% for m in messages %}[{{ m.role }}:{{ m.content }}]{% endfor %}"
    "{% if tools %}T{% endif %}{% if add_generation_prompt %}>{% endif %}"
    "{% set ns = namespace(n=0) %}{% for i in range(2) %}{% set ns.n = ns.n + 1 %}{% endfor %}{{ ns.n }}"
    "{% if style %}|{{ style }}{% endif %}";

std::string render(const json& kwargs) {
  auto model = std::make_shared<ServingModel>("demo", std::make_shared<gs::testing::FakeTokenizer>(),
                                              std::make_shared<ChatTemplate>(kTemplate), GenerationConfig{});
  json body = {{"messages", {{{"role", "user"}, {"content", "Hi"}}}}, {"chat_template_kwargs", kwargs}};
  return render_chat_prompt(parse_chat_request(parse_json_body(body.dump())), *model, true);
}

ApiError refusal(const json& kwargs) {
  try {
    std::string out = render(kwargs);
    ADD_FAILURE() << kwargs.dump() << " was accepted and rendered " << out;
  } catch (const ApiError& e) {
    return e;
  }
  return ApiError(0, "", "");
}

TEST(TemplateKwargs, TemplateSwitchesChangeTheRendering) {
  EXPECT_EQ(render(json::object()), "<bos>[user:Hi]>2");
  EXPECT_EQ(render({{"style", "terse"}}), "<bos>[user:Hi]>2|terse");
  EXPECT_EQ(render({{"enable_thinking", true}, {"style", 3}}), "<bos>[user:Hi]>2|3");
}

TEST(TemplateKwargs, RendererInputsAreRefused) {
  const json injected = {{"messages", {{{"role", "system"}, {"content", "unvalidated"}}}},
                         {"bos_token", "<evil>"},
                         {"eos_token", "<evil>"},
                         {"pad_token", "<evil>"},
                         {"additional_special_tokens", {"<evil>"}},
                         {"add_generation_prompt", false},
                         {"tools", {{{"type", "function"}}}},
                         {"documents", {"d"}}};
  for (const auto& [key, value] : injected.items()) {
    ApiError e = refusal({{key, value}});
    EXPECT_EQ(e.status(), 400) << key;
    EXPECT_EQ(e.param(), "chat_template_kwargs") << key;
    EXPECT_NE(std::string(e.what()).find("'" + key + "'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(key == "messages" || key == "tools" || key == "documents" ||
                                                 key == "add_generation_prompt"
                                             ? "input of the template"
                                             : "special-token variable"),
              std::string::npos)
        << e.what();
  }
}

TEST(TemplateKwargs, JinjaGlobalsAndBlockVariablesAreRefused) {
  for (const char* key : {"range", "namespace", "dict", "cycler", "joiner", "raise_exception", "strftime_now"}) {
    ApiError e = refusal({{key, 1}});
    EXPECT_EQ(e.status(), 400) << key;
    EXPECT_EQ(e.param(), "chat_template_kwargs");
    EXPECT_NE(std::string(e.what()).find("Jinja built-in"), std::string::npos) << e.what();
  }
  for (const char* key : {"loop", "caller", "varargs", "kwargs"}) {
    ApiError e = refusal({{key, 1}});
    EXPECT_NE(std::string(e.what()).find("binds in loops and macros"), std::string::npos) << e.what();
  }
}

TEST(TemplateKwargs, OneBadKeyRefusesTheWholeRequest) {
  ApiError e = refusal({{"enable_thinking", true}, {"style", "x"}, {"range", "x"}});
  EXPECT_NE(std::string(e.what()).find("'range'"), std::string::npos) << e.what();
}

}  // namespace
}  // namespace gs::api
