// Fuzzes the chat-template interpreter: parse + render of arbitrary template source, with an
// optional conversation after a NUL byte (JSON). Any gs::Error is fine; crashes, sanitizer
// reports, leaks and hangs are not (small limits keep every input fast).
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "chat/jinja/json_value.h"
#include "chat/jinja/template.h"
#include "core/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string input(reinterpret_cast<const char*>(data), size);
  std::string source = input, conversation;
  if (size_t nul = input.find('\0'); nul != std::string::npos) {
    source = input.substr(0, nul);
    conversation = input.substr(nul + 1);
  }
  using gs::jinja::Value;
  std::vector<std::pair<std::string, Value>> vars = {
      {"bos_token", Value::string("<bos>")}, {"eos_token", Value::string("<eos>")},
      {"add_generation_prompt", Value::boolean(true)}, {"tools", Value::none()}};
  try {
    auto conv = nlohmann::ordered_json::parse(conversation.empty() ? R"({"messages": [{"role": "user", "content": "hi"}]})"
                                                                   : conversation);
    if (conv.is_object()) {
      for (auto it = conv.begin(); it != conv.end(); ++it) vars.emplace_back(it.key(), gs::jinja::from_json(it.value()));
    } else {
      vars.emplace_back("messages", gs::jinja::from_json(conv));
    }
  } catch (const nlohmann::json::exception&) {
  } catch (const gs::Error&) {
  }
  try {
    gs::jinja::Template t(source);
    gs::jinja::RenderLimits limits;
    limits.max_steps = 200000;
    limits.max_output_bytes = 1 << 20;
    limits.max_nesting = 400;
    t.render(vars, limits);
  } catch (const gs::Error&) {
  }
  return 0;
}
