// ChatTemplate: finding a model directory's template and special tokens, the variables it passes
// (as transformers does), key order, and the demo template's layout.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "chat/chat_template.h"
#include "chat/demo_template.h"
#include "core/error.h"

namespace gs {
namespace {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

class ModelDir : public ::testing::Test {
 protected:
  fs::path dir = fs::temp_directory_path() /
                 ("gs_chat_model_" + std::to_string(::getpid()) + "_" +
                  ::testing::UnitTest::GetInstance()->current_test_info()->name());
  void SetUp() override { fs::create_directories(dir); }
  void TearDown() override { fs::remove_all(dir); }
  void write(const std::string& name, const std::string& text) { std::ofstream(dir / name, std::ios::binary) << text; }
};

const ojson kUser = ojson::parse(R"([{"role": "user", "content": "Hi"}])");

TEST_F(ModelDir, PrefersChatTemplateJinjaAndReadsSpecialTokens) {
  write("chat_template.jinja", "{{ bos_token }}|{{ eos_token }}|{{ pad_token }}|{{ messages[0].content }}");
  write("tokenizer_config.json", R"({"bos_token": {"content": "<B>", "__type": "AddedToken"}, "eos_token": "<E>",
      "pad_token": "<P>", "unk_token": null, "chat_template": "ignored"})");
  auto t = ChatTemplate::from_model_dir(dir.string());
  EXPECT_EQ(t.render(kUser, nullptr, false), "<B>|<E>|<P>|Hi");
}

TEST_F(ModelDir, TemplateFromTokenizerConfigStringOrNamedList) {
  write("tokenizer_config.json", R"({"chat_template": "plain:{{ messages|length }}"})");
  EXPECT_EQ(ChatTemplate::from_model_dir(dir.string()).render(kUser, nullptr, false), "plain:1");
  write("tokenizer_config.json",
        R"({"chat_template": [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "D"}]})");
  EXPECT_EQ(ChatTemplate::from_model_dir(dir.string()).render(kUser, nullptr, false), "D");
  write("tokenizer_config.json", R"({"chat_template": [{"name": "tool_use", "template": "T"}]})");
  try {
    ChatTemplate::from_model_dir(dir.string());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("\"tool_use\""), std::string::npos) << e.what();
  }
}

TEST_F(ModelDir, ClearErrors) {
  try {
    ChatTemplate::from_model_dir(dir.string());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no chat template"), std::string::npos) << e.what();
  }
  write("chat_template.jinja", "ok\n{% if %}");
  try {
    ChatTemplate::from_model_dir(dir.string());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("line 2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(dir.string()), std::string::npos) << e.what();
  }
  EXPECT_THROW(ChatTemplate::from_model_dir((dir / "missing").string()), Error);
}

TEST(ChatTemplateVars, SameVariablesAsTransformers) {
  ChatTemplate t(
      "{{ tools is none }}{{ tools is defined }}{{ documents is none }}{{ add_generation_prompt }}"
      "{{ enable_thinking is defined }}{{ custom }}");
  EXPECT_EQ(t.render(kUser, nullptr, true), "TrueTrueTrueTrueFalse");
  EXPECT_EQ(t.render(kUser, nullptr, false, ojson{{"enable_thinking", true}, {"custom", 7}}), "TrueTrueTrueFalseTrue7");
}

TEST(ChatTemplateVars, ExtraVariablesCannotReplaceInputsOrBuiltins) {
  ChatTemplate t("{{ bos_token }}{{ messages | length }}{{ range(2) | list | length }}{{ custom }}");
  EXPECT_EQ(t.render(kUser, nullptr, false, ojson{{"custom", "!"}}), "<bos>12!");
  for (const char* name : {"messages", "tools", "documents", "add_generation_prompt", "bos_token", "eos_token",
                           "mask_token", "additional_special_tokens", "range", "namespace", "dict", "raise_exception",
                           "strftime_now", "loop", "caller", "varargs", "kwargs"}) {
    EXPECT_NE(ChatTemplate::reserved_variable_reason(name), "") << name;
    try {
      t.render(kUser, nullptr, false, ojson{{name, "x"}});
      ADD_FAILURE() << name << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("'") + name + "'"), std::string::npos) << e.what();
    }
  }
  for (const char* name : {"enable_thinking", "custom", "reasoning_effort", "builtin_tools", "date_string"})
    EXPECT_EQ(ChatTemplate::reserved_variable_reason(name), "") << name;
}

TEST(ChatTemplateVars, OrderedJsonKeepsKeyOrderForTojson) {
  ChatTemplate t("{{ messages[0].tool_calls[0].function.arguments | tojson }}");
  auto msgs = ojson::parse(
      R"([{"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": {"zeta": 1, "alpha": [true, null]}}}]}])");
  EXPECT_EQ(t.render(msgs, nullptr, false), R"({"zeta": 1, "alpha": [true, null]})");
  // nlohmann::json sorts keys on parse: documented in the header.
  EXPECT_EQ(t.render(nlohmann::json(msgs), nlohmann::json(nullptr), false), R"({"alpha": [true, null], "zeta": 1})");
}

TEST(ChatTemplateVars, RejectsMalformedArguments) {
  ChatTemplate t("x");
  EXPECT_THROW(t.render(ojson::object(), nullptr, false), Error);
  EXPECT_THROW(t.render(kUser, ojson::object(), false), Error);
}

TEST(DemoTemplate, GemmaLayout) {
  ChatTemplate t(demo_chat_template(), "<bos>", "<eos>");
  auto msgs = ojson::parse(R"([{"role": "system", "content": " Be brief. "}, {"role": "user", "content": "Hi\n"},
      {"role": "assistant", "content": "Hello."}, {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "What is it?"}]}])");
  EXPECT_EQ(t.render(msgs, nullptr, true),
            "<bos><|turn>system\nBe brief.<turn|>\n<|turn>user\nHi<turn|>\n<|turn>model\nHello.<turn|>\n"
            "<|turn>user\n<|image|>What is it?<turn|>\n<|turn>model\n");
  EXPECT_EQ(t.render(ojson::parse(R"([{"role": "user", "content": "Q"}])"), nullptr, false, ojson{{"enable_thinking", true}}),
            "<bos><|turn>system\n<|think|>\n<turn|>\n<|turn>user\nQ<turn|>\n");
}

TEST(DemoTemplate, ToolsCallsAndResponsesShareTheModelTurn) {
  ChatTemplate t(demo_chat_template(), "<bos>", "<eos>");
  auto tools = ojson::parse(R"([{"type": "function", "function": {"name": "now", "description": "Time"}}])");
  auto msgs = ojson::parse(R"([{"role": "user", "content": "Time?"},
      {"role": "assistant", "tool_calls": [{"id": "c1", "function": {"name": "now", "arguments": {"tz": "UTC"}}}]},
      {"role": "tool", "tool_call_id": "c1", "content": "12:00"}])");
  EXPECT_EQ(t.render(msgs, tools, true),
            "<bos><|turn>system\n<|tool>declaration:now{\"name\": \"now\", \"description\": \"Time\"}<tool|><turn|>\n"
            "<|turn>user\nTime?<turn|>\n<|turn>model\n<|tool_call>call:now{tz:\"UTC\"}<tool_call|>"
            "<|tool_response>response:now{value:\"12:00\"}<tool_response|>");
}

}  // namespace
}  // namespace gs
