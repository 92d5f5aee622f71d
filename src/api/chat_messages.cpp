#include "api/chat_messages.h"

#include <fmt/format.h>

#include "api/api_error.h"
#include "api/json_fields.h"
#include "api/openai_request.h"

namespace gs::api {

using json = RequestJson;  // client key order kept (tool-call arguments, tools)

namespace {

bool known_role(const std::string& r) {
  return r == "system" || r == "developer" || r == "user" || r == "assistant" || r == "tool";
}

// detail -> soft-token budget: "low" the smallest, "high" the largest, "auto" the default.
std::optional<int> budget_for_detail(const std::string& detail, const std::string& where) {
  if (detail == "auto") return std::nullopt;
  if (detail == "low") return 70;
  if (detail == "high") return 1120;
  throw invalid_request(fmt::format("{}.image_url.detail: must be \"auto\", \"low\" or \"high\", got {}", where,
                                    brief(json(detail))), "messages");
}

ImagePart image_part(const FieldReader& part, const std::string& where) {
  const json* iu = part.raw("image_url");
  if (!iu) throw invalid_request(where + ".image_url: required for an image_url part", "messages");
  if (!iu->is_object()) {
    throw invalid_request(fmt::format("{}.image_url: must be an object {{\"url\": ...}}, got {}", where, brief(*iu)),
                          "messages");
  }
  FieldReader f(*iu, where + ".image_url");
  auto url = f.string("url");
  if (!url || url->empty()) throw invalid_request(where + ".image_url.url: required", "messages");
  ImagePart p{*url, std::nullopt, where};
  if (auto detail = f.string("detail")) p.budget = budget_for_detail(*detail, where);
  return p;
}

json normalize_content(const json& content, const std::string& where, std::vector<ImagePart>* images) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) {
    throw invalid_request(fmt::format("{}.content: must be a string or an array of content parts, got {}", where,
                                      brief(content)), "messages");
  }
  std::string text;
  json parts = json::array();
  bool has_image = false;
  for (size_t i = 0; i < content.size(); ++i) {
    std::string pw = fmt::format("{}.content[{}]", where, i);
    FieldReader part(content[i], pw);
    auto type = part.string("type");
    if (!type) throw invalid_request(pw + ".type: required", "messages");
    if (*type == "image_url") {
      images->push_back(image_part(part, pw));
      parts.push_back({{"type", "image"}});
      has_image = true;
      continue;
    }
    if (*type != "text") {
      throw unsupported(fmt::format("{}: content parts of type \"{}\" are not supported (text and image_url only)", pw,
                                    *type), "messages");
    }
    auto t = part.string("text");
    if (!t) throw invalid_request(pw + ".text: required for a text part", "messages");
    parts.push_back({{"type", "text"}, {"text", *t}});
    if (i > 0) text += "\n";
    text += *t;
  }
  if (has_image) return parts;
  return text;
}

json normalize_tool_call(const json& tc, const std::string& where) {
  FieldReader f(tc, where);
  const json* fn = f.object("function");
  if (!fn) throw invalid_request(where + ".function: required", "messages");
  FieldReader ff(*fn, where + ".function");
  auto name = ff.string("name");
  if (!name || name->empty()) throw invalid_request(where + ".function.name: required", "messages");
  json args = json::object();
  if (const json* a = ff.raw("arguments")) {
    if (a->is_string()) {
      // OpenAI sends arguments as JSON text; the template wants the object.
      try {
        args = json::parse(a->get<std::string>());
      } catch (const json::exception&) {  // parse_error, or out_of_range for "1e999"
        throw invalid_request(fmt::format("{}.function.arguments: not valid JSON: {}", where, brief(*a)), "messages");
      }
    } else if (a->is_object()) {
      args = *a;
    } else {
      throw invalid_request(fmt::format("{}.function.arguments: must be a JSON string, got {}", where, brief(*a)),
                            "messages");
    }
  }
  json out = {{"type", "function"}, {"function", {{"name", *name}, {"arguments", args}}}};
  if (auto id = f.string("id")) out["id"] = *id;
  return out;
}

}  // namespace

json normalize_messages(const json& messages, std::vector<ImagePart>* images) {
  if (!messages.is_array()) throw invalid_request("messages: must be an array", "messages");
  if (messages.empty()) throw invalid_request("messages: must contain at least one message", "messages");
  json out = json::array();
  for (size_t i = 0; i < messages.size(); ++i) {
    std::string where = fmt::format("messages[{}]", i);
    FieldReader f(messages[i], where);
    auto role = f.string("role");
    if (!role) throw invalid_request(where + ".role: required", "messages");
    if (!known_role(*role)) {
      throw invalid_request(fmt::format("{}.role: unknown role \"{}\" (expected system, developer, user, assistant or tool)",
                                        where, *role), "messages");
    }
    json m = {{"role", *role}};
    const json* content = f.raw("content");
    const json* calls = f.array("tool_calls");
    if (calls && *role != "assistant") throw invalid_request(where + ".tool_calls: only assistant messages have tool calls", "messages");
    if (content) {
      m["content"] = normalize_content(*content, where, images);
    } else if (!calls || calls->empty()) {
      throw invalid_request(where + ".content: required", "messages");
    } else {
      m["content"] = "";
    }
    if (calls && !calls->empty()) {
      json tcs = json::array();
      for (size_t k = 0; k < calls->size(); ++k) tcs.push_back(normalize_tool_call(calls->at(k), fmt::format("{}.tool_calls[{}]", where, k)));
      m["tool_calls"] = tcs;
    }
    if (auto name = f.string("name")) m["name"] = *name;
    if (auto id = f.string("tool_call_id")) m["tool_call_id"] = *id;
    out.push_back(std::move(m));
  }
  return out;
}

void parse_tools(const FieldReader& f, OpenAIRequest& r) {
  std::string choice = "auto";
  if (const json* tc = f.raw("tool_choice")) {
    if (tc->is_string()) {
      choice = tc->get<std::string>();
      if (choice == "required") throw unsupported("tool_choice \"required\" is not supported (no constrained decoding)", "tool_choice");
      if (choice != "auto" && choice != "none") {
        throw invalid_request(fmt::format("tool_choice: must be \"auto\", \"none\" or \"required\", got \"{}\"", choice), "tool_choice");
      }
    } else if (tc->is_object()) {
      throw unsupported("tool_choice naming a function is not supported (no constrained decoding)", "tool_choice");
    } else {
      throw invalid_request(fmt::format("tool_choice: must be a string, got {}", brief(*tc)), "tool_choice");
    }
  }
  const json* tools = f.array("tools");
  if (!tools || tools->empty() || choice == "none") return;
  for (size_t i = 0; i < tools->size(); ++i) {
    std::string where = fmt::format("tools[{}]", i);
    FieldReader t(tools->at(i), where);
    if (t.string("type").value_or("") != "function") throw invalid_request(where + ".type: must be \"function\"", "tools");
    const json* fn = t.object("function");
    if (!fn) throw invalid_request(where + ".function: required", "tools");
    FieldReader ff(*fn, where + ".function");
    auto name = ff.string("name");
    if (!name || name->empty()) throw invalid_request(where + ".function.name: required", "tools");
    ff.string("description");
    ff.object("parameters");
  }
  r.tools = *tools;
}

}  // namespace gs::api
