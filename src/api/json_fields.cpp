#include "api/json_fields.h"

#include <cmath>

#include <fmt/format.h>

#include "api/api_error.h"

namespace gs::api {

using json = RequestJson;

std::string brief(const json& v) {
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

FieldReader::FieldReader(const json& obj, std::string where) : obj_(obj), where_(std::move(where)) {
  if (!obj_.is_object()) {
    throw invalid_request(fmt::format("{}: must be a JSON object, got {}", where_.empty() ? "body" : where_, brief(obj_)),
                          where_);
  }
}

std::string FieldReader::name(const char* key) const { return where_.empty() ? key : where_ + "." + key; }

const json* FieldReader::raw(const char* key) const {
  auto it = obj_.find(key);
  if (it == obj_.end() || it->is_null()) return nullptr;
  return &*it;
}

std::optional<double> FieldReader::number(const char* key, double lo, double hi) const {
  const json* v = raw(key);
  if (!v) return std::nullopt;
  if (!v->is_number() || !std::isfinite(v->get<double>()) || v->get<double>() < lo || v->get<double>() > hi) {
    throw invalid_request(fmt::format("{}: must be a number in [{}, {}], got {}", name(key), lo, hi, brief(*v)), name(key));
  }
  return v->get<double>();
}

std::optional<int64_t> FieldReader::integer(const char* key, int64_t lo, int64_t hi) const {
  const json* v = raw(key);
  if (!v) return std::nullopt;
  bool ok = false;
  int64_t x = 0;
  if (v->is_number_unsigned()) {
    uint64_t u = v->get<uint64_t>();
    ok = u <= static_cast<uint64_t>(INT64_MAX);
    x = static_cast<int64_t>(u);
  } else if (v->is_number_integer()) {
    ok = true;
    x = v->get<int64_t>();
  } else if (v->is_number_float()) {
    // 16.0 is an integer to most JSON writers; 16.5 is not.
    double d = v->get<double>();
    ok = std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e15;
    x = ok ? static_cast<int64_t>(d) : 0;
  }
  if (!ok || x < lo || x > hi) {
    throw invalid_request(fmt::format("{}: must be an integer in [{}, {}], got {}", name(key), lo, hi, brief(*v)), name(key));
  }
  return x;
}

std::optional<bool> FieldReader::boolean(const char* key) const {
  const json* v = raw(key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) throw invalid_request(fmt::format("{}: must be true or false, got {}", name(key), brief(*v)), name(key));
  return v->get<bool>();
}

std::optional<std::string> FieldReader::string(const char* key) const {
  const json* v = raw(key);
  if (!v) return std::nullopt;
  if (!v->is_string()) throw invalid_request(fmt::format("{}: must be a string, got {}", name(key), brief(*v)), name(key));
  return v->get<std::string>();
}

const json* FieldReader::object(const char* key) const {
  const json* v = raw(key);
  if (v && !v->is_object()) throw invalid_request(fmt::format("{}: must be an object, got {}", name(key), brief(*v)), name(key));
  return v;
}

const json* FieldReader::array(const char* key) const {
  const json* v = raw(key);
  if (v && !v->is_array()) throw invalid_request(fmt::format("{}: must be an array, got {}", name(key), brief(*v)), name(key));
  return v;
}

}  // namespace gs::api
