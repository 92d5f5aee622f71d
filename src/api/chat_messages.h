// Chat messages and tools of a /v1/chat/completions body, checked and put in the shape the
// model's chat template reads: content as one string, assistant tool-call arguments as JSON
// objects (OpenAI sends them as JSON text), roles limited to what the template knows.
#pragma once
#include <nlohmann/json.hpp>

#include "api/openai_request.h"

namespace gs::api {

class FieldReader;

// Roles: system, developer, user, assistant, tool. Content: a string, null (assistant with
// tool_calls only) or an array of {"type":"text","text":...} and {"type":"image_url",...} parts;
// audio, video and files are refused. Text-only content becomes one string (parts joined by "\n");
// content with images stays an array of {"type":"text","text"} and {"type":"image"} parts, as
// transformers' templates read it, and each image part is appended to `images`.
RequestJson normalize_messages(const RequestJson& messages, std::vector<ImagePart>* images);

// tools / tool_choice. tool_choice "none" drops the tools from the prompt; "auto" (default) keeps
// them; "required" or a named function would need constrained decoding and are refused.
void parse_tools(const FieldReader& body, OpenAIRequest& r);

}  // namespace gs::api
