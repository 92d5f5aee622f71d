// Gemma-4 tool calls, as the model writes them between <|tool_call> and <tool_call|>:
//   call:NAME{key:value,...}
// where string values are wrapped in the <|"|> token, and values may be numbers, true/false/null,
// nested {...} objects or [...] arrays. parse_tool_call turns the text between the markers into
// the OpenAI shape (name + arguments as JSON text). Best effort: text that does not follow the
// format gives nullopt, and the caller shows it as content instead.
#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace gs::api {

struct ParsedToolCall {
  std::string name;
  std::string arguments;  // a JSON object, serialized
};

constexpr std::string_view kToolStringDelimiter = "<|\"|>";

std::optional<ParsedToolCall> parse_tool_call(std::string_view text);

}  // namespace gs::api
