// `gemmaserve chat-template`: prints the prompt a chat template renders for a conversation,
// byte for byte (no trailing newline added), so scripts and tests can compare it.
#include <cstdio>

#include "chat/chat_template.h"
#include "cli/command.h"
#include "core/error.h"
#include "core/read_file.h"

namespace gs::cli {

namespace {

struct Options {
  std::string model, template_file, messages, tools;
  std::string bos_token = "<bos>", eos_token = "<eos>";
  bool add_generation_prompt = false, enable_thinking = false;
};

nlohmann::ordered_json read_json(const std::string& path) {
  try {
    return nlohmann::ordered_json::parse(read_file(path));
  } catch (const nlohmann::json::exception& e) {
    throw Error("{}: invalid JSON: {}", path, e.what());
  }
}

int run(const Options& o) {
  GS_CHECK(o.model.empty() != o.template_file.empty(), "give exactly one of --model DIR or --template FILE");
  ChatTemplate tmpl = o.model.empty() ? ChatTemplate(read_file(o.template_file), o.bos_token, o.eos_token)
                                      : ChatTemplate::from_model_dir(o.model);
  // CONV.json is an OpenAI messages array, or a conversation object of the test corpus:
  // {"messages": [...], "tools": [...], "add_generation_prompt": bool, "enable_thinking": bool}.
  nlohmann::ordered_json conv = read_json(o.messages);
  nlohmann::ordered_json messages = conv, tools = nullptr, extra = nlohmann::ordered_json::object();
  bool add_generation_prompt = o.add_generation_prompt;
  if (conv.is_object()) {
    GS_CHECK(conv.contains("messages"), "{}: expected a messages array or an object with \"messages\"", o.messages);
    messages = conv["messages"];
    if (conv.contains("tools")) tools = conv["tools"];
    if (conv.contains("add_generation_prompt")) add_generation_prompt |= conv["add_generation_prompt"].get<bool>();
    if (conv.contains("enable_thinking")) extra["enable_thinking"] = conv["enable_thinking"];
    if (conv.contains("extra") && conv["extra"].is_object()) extra.update(conv["extra"]);
  }
  if (!o.tools.empty()) tools = read_json(o.tools);
  if (o.enable_thinking) extra["enable_thinking"] = true;
  std::string out = tmpl.render(messages, tools, add_generation_prompt, extra);
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fflush(stdout);
  return 0;
}

}  // namespace

GS_REGISTER_COMMAND(chat_template, "chat-template", "Render a chat template for a conversation (exact bytes)",
                    [](CLI::App& app) -> std::function<int()> {
                      auto o = std::make_shared<Options>();
                      app.add_option("--model", o->model, "model directory (its chat template and special tokens)");
                      app.add_option("--template", o->template_file, "a Jinja chat template file instead of --model");
                      app.add_option("--messages", o->messages, "CONV.json: messages array or conversation object")
                          ->required();
                      app.add_option("--tools", o->tools, "TOOLS.json: array of tool (function) declarations");
                      app.add_flag("--add-generation-prompt", o->add_generation_prompt,
                                   "end with the prompt that starts the model's turn");
                      app.add_flag("--enable-thinking", o->enable_thinking, "pass enable_thinking=true");
                      app.add_option("--bos-token", o->bos_token, "bos_token for --template (default <bos>)");
                      app.add_option("--eos-token", o->eos_token, "eos_token for --template (default <eos>)");
                      return [o] { return run(*o); };
                    });

}  // namespace gs::cli
