// Typed reads of an OpenAI request body. A JSON null counts as "not given" (the official clients
// send nulls for unset fields); a wrong type is an invalid_request_error naming the field, e.g.
// "temperature: must be a number, got "hot"". Value ranges of what the engine runs are checked by
// engine/request_validation.h; the ranged reads are for the request's own shape (n, best_of).
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

  std::optional<double> number(const char* key) const;  // any finite number
  std::optional<int64_t> integer(const char* key, int64_t lo, int64_t hi) const;
  // An integer that fits the engine's int fields; 16.0 counts as an integer, as most JSON writers mean it.
  std::optional<int> int32(const char* key) const;
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

// A request's double as the engine's float. Beyond float's range it is +-infinity, which no range
// of the request validation accepts (a plain cast would be undefined behaviour).
float to_float(double x);

// A short, bounded rendering of a JSON value for error messages.
std::string brief(const RequestJson& v);

}  // namespace gs::api
