#include "tokenizer/json_fields.h"

#include "core/error.h"

namespace gs {

const nlohmann::json& json_field(const nlohmann::json& j, const char* key, const std::string& where) {
  GS_CHECK(j.is_object(), "{}: expected an object, found {}", where, j.type_name());
  auto it = j.find(key);
  GS_CHECK(it != j.end(), "{}: missing field '{}'", where, key);
  return *it;
}

std::string json_string(const nlohmann::json& j, const char* key, const std::string& where) {
  const auto& v = json_field(j, key, where);
  GS_CHECK(v.is_string(), "{}: field '{}' must be a string, found {}", where, key, v.type_name());
  return v.get<std::string>();
}

const nlohmann::json& json_array(const nlohmann::json& j, const char* key, const std::string& where) {
  const auto& v = json_field(j, key, where);
  GS_CHECK(v.is_array(), "{}: field '{}' must be an array, found {}", where, key, v.type_name());
  return v;
}

const nlohmann::json& json_object(const nlohmann::json& j, const char* key, const std::string& where) {
  const auto& v = json_field(j, key, where);
  GS_CHECK(v.is_object(), "{}: field '{}' must be an object, found {}", where, key, v.type_name());
  return v;
}

bool json_bool(const nlohmann::json& j, const char* key, bool fallback, const std::string& where) {
  GS_CHECK(j.is_object(), "{}: expected an object, found {}", where, j.type_name());
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  GS_CHECK(it->is_boolean(), "{}: field '{}' must be true or false, found {}", where, key, it->type_name());
  return it->get<bool>();
}

long long json_int(const nlohmann::json& j, const char* key, const std::string& where) {
  const auto& v = json_field(j, key, where);
  GS_CHECK(v.is_number_integer(), "{}: field '{}' must be an integer, found {}", where, key, v.type_name());
  return v.get<long long>();
}

std::string json_string_pattern(const nlohmann::json& j, const std::string& where) {
  const auto& p = json_object(j, "pattern", where);
  if (p.contains("String")) {
    GS_CHECK(p["String"].is_string(), "{}: pattern.String must be a string", where);
    return p["String"].get<std::string>();
  }
  if (p.contains("Regex")) throw Error("{}: Regex patterns are not supported here (only String patterns)", where);
  throw Error("{}: pattern must be {{\"String\": ...}}", where);
}

}  // namespace gs
