#include "chat/chat_template.h"

#include <algorithm>
#include <filesystem>
#include <optional>

#include "chat/jinja/interpreter.h"
#include "chat/jinja/json_value.h"
#include "chat/jinja/objects.h"
#include "chat/jinja/template.h"
#include "core/error.h"
#include "core/read_file.h"

namespace gs {

namespace fs = std::filesystem;

namespace {

// transformers passes its special_tokens_map: the named special tokens that are set, plus
// additional_special_tokens (a list).
constexpr const char* kSpecialTokenNames[] = {"bos_token", "eos_token", "unk_token", "sep_token",
                                              "pad_token", "cls_token", "mask_token"};
constexpr const char* kAdditionalSpecialTokens = "additional_special_tokens";
// What render() itself passes besides the special tokens.
constexpr const char* kMessages = "messages";
constexpr const char* kTools = "tools";
constexpr const char* kDocuments = "documents";
constexpr const char* kAddGenerationPrompt = "add_generation_prompt";
constexpr const char* kRendererInputs[] = {kMessages, kTools, kDocuments, kAddGenerationPrompt};

bool in(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

struct ChatTemplate::Impl {
  std::string source;
  jinja::Template tmpl;
  std::vector<std::pair<std::string, std::string>> special;
  std::vector<std::string> additional_special;
  bool has_additional = false;
  Impl(std::string src) : source(std::move(src)), tmpl(source) {}
};

static nlohmann::ordered_json read_json(const fs::path& p) {
  try {
    return nlohmann::ordered_json::parse(read_file(p.string()));
  } catch (const nlohmann::json::exception& e) {
    throw Error("{}: invalid JSON: {}", p.string(), e.what());
  }
}

// A special token in tokenizer_config.json is a string or an AddedToken object {"content": ...}.
static std::optional<std::string> token_text(const nlohmann::ordered_json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
  return std::nullopt;
}

// tokenizer_config.json's chat_template: a string, or [{"name": ..., "template": ...}, ...].
static std::string template_from_config(const nlohmann::ordered_json& ct, const fs::path& file) {
  if (ct.is_string()) return ct.get<std::string>();
  GS_CHECK(ct.is_array(), "{}: chat_template must be a string or a list of named templates", file.string());
  std::string names;
  for (const auto& t : ct) {
    GS_CHECK(t.is_object() && t.contains("name") && t.contains("template") && t["template"].is_string(),
             "{}: each named chat_template needs \"name\" and \"template\"", file.string());
    if (t["name"] == "default") return t["template"].get<std::string>();
    names += (names.empty() ? "" : ", ") + t["name"].dump();
  }
  throw Error("{}: several chat templates ({}) and none named \"default\"", file.string(), names);
}

ChatTemplate ChatTemplate::from_model_dir(const std::string& dir) {
  fs::path root(dir);
  GS_CHECK(fs::is_directory(root), "model directory {} does not exist", dir);
  nlohmann::ordered_json config = nlohmann::ordered_json::object();
  fs::path config_file = root / "tokenizer_config.json";
  if (fs::exists(config_file)) config = read_json(config_file);
  GS_CHECK(config.is_object(), "{}: expected a JSON object", config_file.string());

  std::string source;
  if (fs::exists(root / "chat_template.jinja")) {
    source = read_file((root / "chat_template.jinja").string());
  } else if (fs::exists(root / "chat_template.json")) {
    auto j = read_json(root / "chat_template.json");
    GS_CHECK(j.is_object() && j.contains("chat_template"), "{}: no \"chat_template\" field",
             (root / "chat_template.json").string());
    source = template_from_config(j["chat_template"], root / "chat_template.json");
  } else if (config.contains("chat_template") && !config["chat_template"].is_null()) {
    source = template_from_config(config["chat_template"], config_file);
  } else {
    throw Error("no chat template in {} (looked for chat_template.jinja, chat_template.json and "
                "tokenizer_config.json's \"chat_template\")", dir);
  }

  ChatTemplate t;
  try {
    t.impl_ = std::make_unique<Impl>(std::move(source));
  } catch (const Error& e) {
    throw Error("chat template of {}: {}", dir, e.what());
  }
  // transformers passes its special_tokens_map: the named special tokens that are set.
  for (const char* name : kSpecialTokenNames) {
    if (!config.contains(name)) continue;
    if (auto text = token_text(config[name])) t.impl_->special.emplace_back(name, *text);
  }
  if (config.contains(kAdditionalSpecialTokens) && config[kAdditionalSpecialTokens].is_array()) {
    t.impl_->has_additional = true;
    for (const auto& v : config[kAdditionalSpecialTokens])
      if (auto text = token_text(v)) t.impl_->additional_special.push_back(*text);
  }
  return t;
}

ChatTemplate::ChatTemplate(std::string source, std::string bos_token, std::string eos_token)
    : impl_(std::make_unique<Impl>(std::move(source))) {
  impl_->special = {{"bos_token", std::move(bos_token)}, {"eos_token", std::move(eos_token)}};
}

ChatTemplate::~ChatTemplate() = default;
ChatTemplate::ChatTemplate(ChatTemplate&&) noexcept = default;
ChatTemplate& ChatTemplate::operator=(ChatTemplate&&) noexcept = default;

const std::vector<std::pair<std::string, std::string>>& ChatTemplate::special_tokens() const {
  return impl_->special;
}
const std::string& ChatTemplate::source() const { return impl_->source; }

std::string ChatTemplate::reserved_variable_reason(const std::string& name) {
  for (const char* n : kRendererInputs)
    if (name == n) return "it is an input of the template, built from the request's own validated fields";
  for (const char* n : kSpecialTokenNames)
    if (name == n) return "it is a special-token variable, set from the model's tokenizer";
  if (name == kAdditionalSpecialTokens) return "it is a special-token variable, set from the model's tokenizer";
  if (in(jinja::builtin_global_names(), name)) return "it is a Jinja built-in function";
  if (in(jinja::block_variable_names(), name)) return "it is a variable Jinja binds in loops and macros";
  return "";
}

std::string ChatTemplate::render(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                                 bool add_generation_prompt, const nlohmann::ordered_json& extra) const {
  GS_CHECK(messages.is_array(), "chat messages must be a JSON array");
  GS_CHECK(tools.is_null() || tools.is_array(), "chat tools must be a JSON array or null");
  GS_CHECK(extra.is_null() || extra.is_object(), "extra chat template variables must be a JSON object");
  // Same variables, in the same precedence, as transformers' render_jinja_template:
  // special tokens, then messages/tools/documents/add_generation_prompt, then extra kwargs.
  std::vector<std::pair<std::string, jinja::Value>> vars;
  for (const auto& [name, text] : impl_->special) vars.emplace_back(name, jinja::Value::string(text));
  if (impl_->has_additional) {
    std::vector<jinja::Value> items;
    for (const auto& s : impl_->additional_special) items.push_back(jinja::Value::string(s));
    vars.emplace_back(kAdditionalSpecialTokens, jinja::Value::list(std::move(items)));
  }
  vars.emplace_back(kMessages, jinja::from_json(messages));
  vars.emplace_back(kTools, jinja::from_json(tools));
  vars.emplace_back(kDocuments, jinja::Value::none());
  vars.emplace_back(kAddGenerationPrompt, jinja::Value::boolean(add_generation_prompt));
  if (extra.is_object()) {
    for (auto it = extra.begin(); it != extra.end(); ++it) {
      std::string why = reserved_variable_reason(it.key());
      GS_CHECK(why.empty(), "extra chat template variable '{}' is not allowed: {}", it.key(), why);
      vars.emplace_back(it.key(), jinja::from_json(it.value()));
    }
  }
  return impl_->tmpl.render(vars);
}

std::string ChatTemplate::render(const nlohmann::json& messages, const nlohmann::json& tools,
                                 bool add_generation_prompt, const nlohmann::json& extra) const {
  return render(nlohmann::ordered_json(messages), nlohmann::ordered_json(tools), add_generation_prompt,
                nlohmann::ordered_json(extra));
}

}  // namespace gs
