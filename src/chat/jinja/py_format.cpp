#include "chat/jinja/py_format.h"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "chat/jinja/utf8.h"
#include "core/error.h"

namespace gs::jinja {

// Reprs nest through namespaces, whose attributes may hold other namespaces without bound.
static thread_local int repr_depth = 0;
struct ReprDepthGuard {
  ReprDepthGuard() {
    if (++repr_depth > 2 * kMaxValueDepth) {
      --repr_depth;
      throw Error("maximum recursion depth exceeded while getting the repr of an object");
    }
  }
  ~ReprDepthGuard() { --repr_depth; }
};

std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  bool neg = sci[0] == '-';
  if (neg) sci.erase(0, 1);
  size_t e_pos = sci.find('e');
  std::string digits = sci.substr(0, e_pos);
  if (digits.size() > 1) digits.erase(1, 1);  // drop the '.'
  int exp10 = std::stoi(sci.substr(e_pos + 1));
  int decpt = exp10 + 1;  // digits are 0.d1d2... * 10^decpt
  std::string out = neg ? "-" : "";
  if (decpt > -4 && decpt <= 16) {
    int n = static_cast<int>(digits.size());
    if (decpt <= 0) {
      out += "0." + std::string(static_cast<size_t>(-decpt), '0') + digits;
    } else if (decpt >= n) {
      out += digits + std::string(static_cast<size_t>(decpt - n), '0') + ".0";
    } else {
      out += digits.substr(0, static_cast<size_t>(decpt)) + "." + digits.substr(static_cast<size_t>(decpt));
    }
  } else {
    out += digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char e[16];
    std::snprintf(e, sizeof e, "e%c%02d", exp10 < 0 ? '-' : '+', std::abs(exp10));
    out += e;
  }
  return out;
}

std::string string_repr(std::string_view s) {
  bool has_single = s.find('\'') != std::string_view::npos;
  bool has_double = s.find('"') != std::string_view::npos;
  char quote = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, quote);
  for (char32_t c : utf8::decode(s)) {
    if (c == static_cast<char32_t>(quote) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (!utf8::is_printable(c)) {
      char buf[16];
      if (c < 0x100)
        std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(c));
      else if (c < 0x10000)
        std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
      else
        std::snprintf(buf, sizeof buf, "\\U%08x", static_cast<unsigned>(c));
      out += buf;
    } else {
      utf8::append(out, c);
    }
  }
  out += quote;
  return out;
}

static std::string container_str(const Value& v) {
  ReprDepthGuard guard;
  std::string out;
  if (v.is_list()) {
    const auto& l = v.list();
    out += l.is_tuple ? "(" : "[";
    for (size_t i = 0; i < l.items.size(); ++i) {
      if (i) out += ", ";
      out += py_repr(l.items[i]);
    }
    if (l.is_tuple && l.items.size() == 1) out += ",";
    out += l.is_tuple ? ")" : "]";
  } else {
    out += "{";
    bool first = true;
    for (const auto& [k, val] : v.dict().items) {
      if (!first) out += ", ";
      first = false;
      out += py_repr(k) + ": " + py_repr(val);
    }
    out += "}";
  }
  return out;
}

std::string py_str(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined: return "";
    case Value::Kind::None: return "None";
    case Value::Kind::Bool: return v.as_bool() ? "True" : "False";
    case Value::Kind::Int: return std::to_string(v.as_int());
    case Value::Kind::Float: return float_repr(v.as_double());
    case Value::Kind::String: return v.str();
    case Value::Kind::List:
    case Value::Kind::Dict: return container_str(v);
    case Value::Kind::Iterator: return "<" + v.iter().type_name + " object>";
    case Value::Kind::Object: {
      ReprDepthGuard guard;
      return v.obj().repr();
    }
  }
  return "";
}

std::string py_repr(const Value& v) {
  if (v.is_string()) return string_repr(v.str());
  if (v.is_undefined()) return "Undefined";
  return py_str(v);
}

}  // namespace gs::jinja
