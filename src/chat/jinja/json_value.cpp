#include "chat/jinja/json_value.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "chat/jinja/py_format.h"
#include "chat/jinja/utf8.h"
#include "core/error.h"

namespace gs::jinja {

template <typename Json>
static Value convert(const Json& j, int depth) {
  GS_CHECK(depth < kMaxValueDepth, "JSON input nested more than {} levels deep", kMaxValueDepth);
  switch (j.type()) {
    case nlohmann::json::value_t::null: return Value::none();
    case nlohmann::json::value_t::boolean: return Value::boolean(j.template get<bool>());
    case nlohmann::json::value_t::number_integer: return Value::integer(j.template get<int64_t>());
    case nlohmann::json::value_t::number_unsigned: {
      auto u = j.template get<uint64_t>();
      if (u <= static_cast<uint64_t>(INT64_MAX)) return Value::integer(static_cast<int64_t>(u));
      return Value::number(static_cast<double>(u));
    }
    case nlohmann::json::value_t::number_float: return Value::number(j.template get<double>());
    case nlohmann::json::value_t::string: return Value::string(j.template get<std::string>());
    case nlohmann::json::value_t::array: {
      std::vector<Value> items;
      items.reserve(j.size());
      for (const auto& e : j) items.push_back(convert(e, depth + 1));
      return Value::list(std::move(items));
    }
    case nlohmann::json::value_t::object: {
      DictData d;
      for (auto it = j.begin(); it != j.end(); ++it) d.set(Value::string(it.key()), convert(it.value(), depth + 1));
      return Value::dict(std::move(d));
    }
    default: throw Error("JSON value of type {} cannot be a template value", j.type_name());
  }
}

Value from_json(const nlohmann::ordered_json& j) { return convert(j, 0); }
Value from_json(const nlohmann::json& j) { return convert(j, 0); }

static void dump_string(std::string& out, const std::string& s, bool ensure_ascii) {
  out += '"';
  auto hex4 = [&](unsigned v) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "\\u%04x", v);
    out += buf;
  };
  for (char32_t c : utf8::decode(s)) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          hex4(c);
        } else if (ensure_ascii && c > 0x7E) {
          if (c >= 0x10000) {
            char32_t v = c - 0x10000;
            hex4(0xD800 + (v >> 10));
            hex4(0xDC00 + (v & 0x3FF));
          } else {
            hex4(c);
          }
        } else {
          utf8::append(out, c);
        }
    }
  }
  out += '"';
}

static std::string dump_float(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
  return float_repr(d);
}

static std::string key_string(const Value& k) {
  switch (k.kind()) {
    case Value::Kind::String: return k.str();
    case Value::Kind::Bool: return k.as_bool() ? "true" : "false";
    case Value::Kind::None: return "null";
    case Value::Kind::Int: return std::to_string(k.as_int());
    case Value::Kind::Float: return dump_float(k.as_double());
    default: throw Error("keys must be str, int, float, bool or None, not {}", type_name(k));
  }
}

static void dump(std::string& out, const Value& v, const JsonDumpOptions& opt, int level) {
  GS_CHECK(level <= kMaxValueDepth, "tojson: value nested too deeply");
  const std::string item_sep = opt.item_separator ? *opt.item_separator : (opt.indent ? "," : ", ");
  auto newline = [&](int lvl) {
    if (!opt.indent) return;
    out += '\n';
    for (int i = 0; i < lvl; ++i) out += *opt.indent;
  };
  switch (v.kind()) {
    case Value::Kind::None: out += "null"; return;
    case Value::Kind::Bool: out += v.as_bool() ? "true" : "false"; return;
    case Value::Kind::Int: out += std::to_string(v.as_int()); return;
    case Value::Kind::Float: out += dump_float(v.as_double()); return;
    case Value::Kind::String: dump_string(out, v.str(), opt.ensure_ascii); return;
    case Value::Kind::List: {
      const auto& items = v.list().items;
      if (items.empty()) {
        out += "[]";
        return;
      }
      out += '[';
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += item_sep;
        newline(level + 1);
        dump(out, items[i], opt, level + 1);
      }
      newline(level);
      out += ']';
      return;
    }
    case Value::Kind::Dict: {
      std::vector<const std::pair<Value, Value>*> items;
      for (const auto& kv : v.dict().items) items.push_back(&kv);
      if (items.empty()) {
        out += "{}";
        return;
      }
      if (opt.sort_keys)
        std::stable_sort(items.begin(), items.end(),
                         [](const auto* a, const auto* b) { return py_less(a->first, b->first); });
      out += '{';
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += item_sep;
        newline(level + 1);
        dump_string(out, key_string(items[i]->first), opt.ensure_ascii);
        out += opt.key_separator;
        dump(out, items[i]->second, opt, level + 1);
      }
      newline(level);
      out += '}';
      return;
    }
    default: throw Error("Object of type {} is not JSON serializable", type_name(v));
  }
}

std::string to_json(const Value& v, const JsonDumpOptions& opt) {
  std::string out;
  dump(out, v, opt, 0);
  return out;
}

}  // namespace gs::jinja
