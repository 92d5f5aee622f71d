// Typed, range-checked reads of an OpenAI request body. A JSON null counts as "not given" (the
// official clients send nulls for unset fields); a wrong type or an out-of-range value is an
// invalid_request_error naming the field, e.g. "temperature: must be a number in [0, 2], got "hot"".
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>

#include "api/openai_request.h"

namespace gs::api {

class FieldReader {
 public:
  // obj must be a JSON object; `where` prefixes field names in messages ("messages[2]").
  FieldReader(const RequestJson& obj, std::string where = "");

  std::optional<double> number(const char* key, double lo, double hi) const;
  std::optional<int64_t> integer(const char* key, int64_t lo, int64_t hi) const;
  std::optional<bool> boolean(const char* key) const;
  std::optional<std::string> string(const char* key) const;
  // The raw value (nullptr when absent or null); type checks are the caller's.
  const RequestJson* raw(const char* key) const;
  const RequestJson* object(const char* key) const;  // must be an object when present
  const RequestJson* array(const char* key) const;   // must be an array when present

  std::string name(const char* key) const;  // "where.key" or "key"

 private:
  const RequestJson& obj_;
  std::string where_;
};

// A short, bounded rendering of a JSON value for error messages.
std::string brief(const RequestJson& v);

}  // namespace gs::api
