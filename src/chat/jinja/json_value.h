// JSON <-> template values: conversation JSON in, and the `tojson` filter out, formatted exactly
// like Python's json.dumps (the filter transformers installs: ensure_ascii=False by default).
#pragma once
#include <nlohmann/json.hpp>

#include <optional>
#include <string>

#include "chat/jinja/value.h"

namespace gs::jinja {

// Objects keep their key order (Python dicts preserve insertion order).
Value from_json(const nlohmann::ordered_json& j);
Value from_json(const nlohmann::json& j);

struct JsonDumpOptions {
  bool ensure_ascii = false;
  std::optional<std::string> indent;  // nullopt: single line
  std::optional<std::string> item_separator;  // default ", " (",\n" style when indented)
  std::string key_separator = ": ";
  bool sort_keys = false;
};

// json.dumps(v, ...): throws gs::Error for values JSON cannot represent (Undefined, generators...).
std::string to_json(const Value& v, const JsonDumpOptions& opt = {});

}  // namespace gs::jinja
