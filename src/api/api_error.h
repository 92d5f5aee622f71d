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
// The error event of a stream (sent before "data: [DONE]"): the error body with the HTTP status
// the request would have had as its integer code, as vLLM sends it, since the stream's own status
// (200) went out with its first byte.
nlohmann::json stream_error_body(int status, const std::string& message);
// OpenAI's error type for an HTTP status ("invalid_request_error", "authentication_error", ...).
const char* error_type_for_status(int status);

}  // namespace gs::api
