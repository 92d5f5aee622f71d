#include "api/api_error.h"

namespace gs::api {

ApiError::ApiError(int status, std::string message, std::string type, std::string param, std::string code)
    : Error(message), status_(status), type_(std::move(type)), param_(std::move(param)), code_(std::move(code)) {}

nlohmann::json ApiError::to_json() const {
  nlohmann::json e = {{"message", what()}, {"type", type_}, {"param", nullptr}, {"code", nullptr}};
  if (!param_.empty()) e["param"] = param_;
  if (!code_.empty()) e["code"] = code_;
  return {{"error", e}};
}

ApiError invalid_request(std::string message, std::string param) {
  return ApiError(400, std::move(message), "invalid_request_error", std::move(param));
}

ApiError unsupported(std::string message, std::string param) {
  return ApiError(400, std::move(message), "invalid_request_error", std::move(param), "unsupported_parameter");
}

const char* error_type_for_status(int status) {
  switch (status) {
    case 401: return "authentication_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 429: return "rate_limit_error";
    case 503: return "service_unavailable_error";
    default: return status >= 500 ? "server_error" : "invalid_request_error";
  }
}

nlohmann::json error_body(int status, const std::string& message, const std::string& param, const std::string& code) {
  return ApiError(status, message, error_type_for_status(status), param, code).to_json();
}

nlohmann::json stream_error_body(int status, const std::string& message) {
  nlohmann::json body = error_body(status, message);
  body["error"]["code"] = status;
  return body;
}

}  // namespace gs::api
