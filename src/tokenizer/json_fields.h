// Checked access to fields of tokenizer.json objects: every failure is a gs::Error that names
// where in the file the problem is (`where` is e.g. "tokenizer.json: decoder.decoders[2]").
#pragma once
#include <nlohmann/json.hpp>

#include <string>

namespace gs {

const nlohmann::json& json_field(const nlohmann::json& j, const char* key, const std::string& where);
std::string json_string(const nlohmann::json& j, const char* key, const std::string& where);
const nlohmann::json& json_array(const nlohmann::json& j, const char* key, const std::string& where);
const nlohmann::json& json_object(const nlohmann::json& j, const char* key, const std::string& where);
// Optional boolean: `fallback` when absent or null.
bool json_bool(const nlohmann::json& j, const char* key, bool fallback, const std::string& where);
long long json_int(const nlohmann::json& j, const char* key, const std::string& where);
// The {"String": "..."} form of a "pattern" field; a {"Regex": ...} pattern is an error.
std::string json_string_pattern(const nlohmann::json& j, const std::string& where);

}  // namespace gs
