// Renders a checkpoint's own chat template (Jinja2) exactly as Python's jinja2 would.
#pragma once
#include <nlohmann/json.hpp>

#include <memory>
#include <string>

namespace gs {

class ChatTemplate {
 public:
  // From a model directory: chat_template.jinja, else tokenizer_config.json's chat_template.
  static ChatTemplate from_model_dir(const std::string& dir);
  // From template source; special tokens (bos_token, eos_token) given as variables.
  ChatTemplate(std::string source, std::string bos_token = "<bos>", std::string eos_token = "<eos>");
  ~ChatTemplate();
  ChatTemplate(ChatTemplate&&) noexcept;
  ChatTemplate& operator=(ChatTemplate&&) noexcept;

  // messages: OpenAI-style array; tools: array or null; extra: more template variables
  // (enable_thinking, ...). Throws gs::Error with the template line on a render error.
  std::string render(const nlohmann::json& messages, const nlohmann::json& tools, bool add_generation_prompt,
                     const nlohmann::json& extra = nlohmann::json::object()) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gs
