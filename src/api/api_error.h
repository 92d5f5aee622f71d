// An error the OpenAI API reports to its client: an HTTP status plus the OpenAI error body
// {"error": {"message", "type", "param", "code"}}. It is a gs::Error, so code below the API that
// only knows gs::Error still prints a sensible message.
#pragma once
#include <nlohmann/json.hpp>

#include <string>

#include "core/error.h"

namespace gs::api {

class ApiError : public Error {
 public:
  ApiError(int status, std::string message, std::string type, std::string param = "", std::string code = "");

  int status() const { return status_; }
  const std::string& type() const { return type_; }
  const std::string& param() const { return param_; }
  const std::string& code() const { return code_; }
  nlohmann::json to_json() const;

 private:
  int status_;
  std::string type_, param_, code_;
};

// 400 invalid_request_error, naming the offending field.
ApiError invalid_request(std::string message, std::string param = "");
// 400 for a field or value the server understands but does not implement.
ApiError unsupported(std::string message, std::string param);
// The OpenAI error body for any status/message (used for 401, 404, 413, 429, 500 ...).
nlohmann::json error_body(int status, const std::string& message, const std::string& param = "",
                          const std::string& code = "");
// OpenAI's error type for an HTTP status ("invalid_request_error", "authentication_error", ...).
const char* error_type_for_status(int status);

}  // namespace gs::api
