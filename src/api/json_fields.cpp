#include "api/json_fields.h"

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "api/api_error.h"

namespace gs::api {

using json = RequestJson;

float to_float(double x) {
  constexpr double kMax = std::numeric_limits<float>::max();
  if (x > kMax) return std::numeric_limits<float>::infinity();
  if (x < -kMax) return -std::numeric_limits<float>::infinity();
  return static_cast<float>(x);
}

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

std::optional<double> FieldReader::number(const char* key) const {
  const json* v = raw(key);
  if (!v) return std::nullopt;
  if (!v->is_number() || !std::isfinite(v->get<double>())) {
    throw invalid_request(fmt::format("{}: must be a number, got {}", name(key), brief(*v)), name(key));
  }
  return v->get<double>();
}

namespace {

// A JSON integer as int64; 16.0 is an integer to most JSON writers, 16.5 is not.
std::optional<int64_t> as_int64(const json& v) {
  if (v.is_number_unsigned()) {
    uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
    return static_cast<int64_t>(u);
  }
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e15) return static_cast<int64_t>(d);
  }
  return std::nullopt;
}

}  // namespace

std::optional<int64_t> FieldReader::integer(const char* key, int64_t lo, int64_t hi) const {
  const json* v = raw(key);
  if (!v) return std::nullopt;
  std::optional<int64_t> x = as_int64(*v);
  if (!x || *x < lo || *x > hi) {
    throw invalid_request(fmt::format("{}: must be an integer in [{}, {}], got {}", name(key), lo, hi, brief(*v)), name(key));
  }
  return x;
}

std::optional<int> FieldReader::int32(const char* key) const {
  const json* v = raw(key);
  if (!v) return std::nullopt;
  std::optional<int64_t> x = as_int64(*v);
  if (!x) throw invalid_request(fmt::format("{}: must be an integer, got {}", name(key), brief(*v)), name(key));
  if (*x < INT32_MIN || *x > INT32_MAX) {
    throw invalid_request(fmt::format("{}: must be a 32-bit integer, got {}", name(key), brief(*v)), name(key));
  }
  return static_cast<int>(*x);
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
