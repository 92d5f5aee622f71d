// Renders a checkpoint's own chat template (Jinja2) exactly as Python's jinja2 would, in the
// environment Hugging Face transformers sets up for chat templates (see src/chat/jinja/).
#pragma once
#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace gs {

class ChatTemplate {
 public:
  // From a model directory: chat_template.jinja, else chat_template.json, else
  // tokenizer_config.json's chat_template (a string, or a list of named templates: "default").
  // Special tokens (bos_token, eos_token, ...) come from tokenizer_config.json.
  static ChatTemplate from_model_dir(const std::string& dir);
  // From template source; special tokens (bos_token, eos_token) given as variables.
  ChatTemplate(std::string source, std::string bos_token = "<bos>", std::string eos_token = "<eos>");
  ~ChatTemplate();
  ChatTemplate(ChatTemplate&&) noexcept;
  ChatTemplate& operator=(ChatTemplate&&) noexcept;

  // messages: OpenAI-style array; tools: array or null; extra: more template variables
  // (enable_thinking, ...). Throws gs::Error with the template line on a render error.
  // Objects keep their key order with ordered_json (what `tojson` prints); nlohmann::json sorts
  // keys, so servers that want transformers' exact output should parse requests as ordered_json.
  std::string render(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                     bool add_generation_prompt,
                     const nlohmann::ordered_json& extra = nlohmann::ordered_json::object()) const;
  std::string render(const nlohmann::json& messages, const nlohmann::json& tools, bool add_generation_prompt,
                     const nlohmann::json& extra = nlohmann::json::object()) const;

  // Why `name` cannot be an extra variable (chat_template_kwargs), or "" when it can. Reserved are
  // the renderer's own inputs (messages, tools, documents, add_generation_prompt and the special
  // tokens, which the server fills from a validated request and the tokenizer) and the names Jinja
  // provides (range, namespace, raise_exception, ..., loop, caller): an extra variable of that name
  // would replace them. render() refuses them too.
  static std::string reserved_variable_reason(const std::string& name);

  // The special-token variables the template sees (name, value), e.g. {"bos_token", "<bos>"}.
  const std::vector<std::pair<std::string, std::string>>& special_tokens() const;
  const std::string& source() const;

 private:
  ChatTemplate() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gs
