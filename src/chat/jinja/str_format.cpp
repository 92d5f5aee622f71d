#include "chat/jinja/str_format.h"

#include <cmath>
#include <cstdio>

#include "chat/jinja/interpreter.h"
#include "chat/jinja/operators.h"
#include "chat/jinja/py_format.h"
#include "chat/jinja/utf8.h"
#include "core/error.h"

namespace gs::jinja {

namespace {

struct Spec {
  std::string fill = " ";
  char align = 0, sign = '-', type = 0;
  bool alt = false, zero = false;
  int64_t width = -1, precision = -1;
  char grouping = 0;
};

Spec parse_spec(const std::string& spec) {
  Spec s;
  std::u32string cps = utf8::decode(spec);
  size_t i = 0;
  auto is_align = [](char32_t c) { return c == '<' || c == '>' || c == '^' || c == '='; };
  if (cps.size() >= 2 && is_align(cps[1])) {
    s.fill.clear();
    utf8::append(s.fill, cps[0]);
    s.align = static_cast<char>(cps[1]);
    i = 2;
  } else if (!cps.empty() && is_align(cps[0])) {
    s.align = static_cast<char>(cps[0]);
    i = 1;
  }
  if (i < cps.size() && (cps[i] == '+' || cps[i] == '-' || cps[i] == ' ')) s.sign = static_cast<char>(cps[i++]);
  if (i < cps.size() && cps[i] == '#') s.alt = true, ++i;
  if (i < cps.size() && cps[i] == '0') s.zero = true, ++i;
  auto number = [&]() {
    int64_t n = 0;
    bool any = false;
    while (i < cps.size() && cps[i] >= '0' && cps[i] <= '9') {
      n = n * 10 + (cps[i++] - '0');
      GS_CHECK(n < 100000, "Too many decimal digits in format string");
      any = true;
    }
    return any ? n : -1;
  };
  s.width = number();
  if (i < cps.size() && (cps[i] == ',' || cps[i] == '_')) s.grouping = static_cast<char>(cps[i++]);
  if (i < cps.size() && cps[i] == '.') {
    ++i;
    s.precision = number();
    GS_CHECK(s.precision >= 0, "Format specifier missing precision");
  }
  if (i < cps.size()) s.type = static_cast<char>(cps[i++]);
  GS_CHECK(i == cps.size(), "Invalid format specifier");
  return s;
}

std::string group_digits(const std::string& digits, char sep) {
  std::string out;
  int n = static_cast<int>(digits.size());
  for (int k = 0; k < n; ++k) {
    if (k && (n - k) % 3 == 0) out += sep;
    out += digits[static_cast<size_t>(k)];
  }
  return out;
}

std::string format_number(const Value& v, Spec& s) {
  std::string body;
  bool neg = false;
  char type = s.type;
  if (type == 0 && v.is_float()) {
    if (s.precision < 0) {
      body = float_repr(std::abs(v.as_double()));
      neg = std::signbit(v.as_double());
    } else {
      type = 'g';
    }
  }
  if (type == 0 || type == 'd' || type == 'n') {
    if (body.empty()) {
      GS_CHECK(!v.is_float(), "Unknown format code 'd' for object of type 'float'");
      int64_t x = v.as_int();
      neg = x < 0;
      body = std::to_string(x);
      if (neg) body.erase(0, 1);
      if (s.grouping) body = group_digits(body, s.grouping);
    }
  } else if (type == 'x' || type == 'X' || type == 'o' || type == 'b' || type == 'c') {
    GS_CHECK(!v.is_float(), "Unknown format code '{}' for object of type 'float'", type);
    int64_t x = v.as_int();
    if (type == 'c') {
      utf8::append(body, static_cast<char32_t>(x));
    } else {
      neg = x < 0;
      uint64_t u = neg ? 0 - static_cast<uint64_t>(x) : static_cast<uint64_t>(x);
      int base = type == 'o' ? 8 : type == 'b' ? 2 : 16;
      const char* digits = type == 'X' ? "0123456789ABCDEF" : "0123456789abcdef";
      do {
        body.insert(body.begin(), digits[u % static_cast<uint64_t>(base)]);
        u /= static_cast<uint64_t>(base);
      } while (u);
      if (s.alt) body = std::string("0") + (type == 'o' ? "o" : type == 'b' ? "b" : type == 'X' ? "X" : "x") + body;
    }
  } else if (std::string_view("eEfFgG%").find(type) != std::string_view::npos) {
    double d = v.as_double();
    neg = std::signbit(d) && !std::isnan(d);
    d = std::abs(d);
    int prec = s.precision < 0 ? 6 : static_cast<int>(s.precision);
    char buf[512];
    if (type == '%') {
      std::snprintf(buf, sizeof buf, "%.*f%%", prec, d * 100);
    } else {
      char f[8] = {'%', '.', '*', type, 0};
      std::snprintf(buf, sizeof buf, f, prec, d);
    }
    body = buf;
  } else {
    throw Error("Unknown format code '{}' for object of type '{}'", type, type_name(v));
  }
  std::string sign = neg ? "-" : s.sign == '+' ? "+" : s.sign == ' ' ? " " : "";
  if (s.zero && s.align == 0) {
    s.align = '=';
    s.fill = "0";
  }
  int64_t len = static_cast<int64_t>(utf8::length(sign + body));
  if (s.align == '=' && s.width > len) return sign + [&] {
      std::string f;
      for (int64_t k = 0; k < s.width - len; ++k) f += s.fill;
      return f;
    }() + body;
  return sign + body;
}

std::string apply_padding(const std::string& text, const Spec& s, char default_align) {
  int64_t len = static_cast<int64_t>(utf8::length(text));
  if (s.width <= len) return text;
  check_string_size(static_cast<size_t>(s.width) * s.fill.size());
  char align = s.align ? s.align : default_align;
  int64_t marg = s.width - len;
  int64_t left = align == '>' ? marg : align == '^' ? marg / 2 : 0;
  std::string out;
  for (int64_t k = 0; k < left; ++k) out += s.fill;
  out += text;
  for (int64_t k = 0; k < marg - left; ++k) out += s.fill;
  return out;
}

}  // namespace

std::string format_value(const Value& v, const std::string& spec) {
  if (spec.empty()) return py_str(v);
  Spec s = parse_spec(spec);
  if (v.is_string()) {
    GS_CHECK(s.type == 0 || s.type == 's', "Unknown format code '{}' for object of type 'str'", s.type);
    std::string text = v.str();
    if (s.precision >= 0) text = utf8::encode(utf8::decode(text).substr(0, static_cast<size_t>(s.precision)));
    return apply_padding(text, s, '<');
  }
  if (v.is_number() && !(v.is_bool() && s.type == 0)) {
    std::string text = format_number(v, s);
    return s.align == '=' ? text : apply_padding(text, s, '>');
  }
  if (v.is_bool()) return apply_padding(py_str(v), s, '<');
  throw Error("unsupported format string passed to {}.__format__", type_name(v));
}

std::string str_format(Interpreter& in, const std::string& fmt, const CallArgs& args) {
  std::string out;
  size_t auto_index = 0;
  bool used_auto = false, used_manual = false;
  for (size_t i = 0; i < fmt.size(); ++i) {
    char c = fmt[i];
    if (c == '}') {
      GS_CHECK(i + 1 < fmt.size() && fmt[i + 1] == '}', "Single '}' encountered in format string");
      out += '}';
      ++i;
      continue;
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (i + 1 < fmt.size() && fmt[i + 1] == '{') {
      out += '{';
      ++i;
      continue;
    }
    size_t close = fmt.find('}', i);
    GS_CHECK(close != std::string::npos, "Single '{' encountered in format string");
    std::string field = fmt.substr(i + 1, close - i - 1);
    GS_CHECK(field.find('{') == std::string::npos, "nested replacement fields are not supported");
    i = close;
    std::string spec, conv;
    if (size_t colon = field.find(':'); colon != std::string::npos) {
      spec = field.substr(colon + 1);
      field.resize(colon);
    }
    if (size_t bang = field.find('!'); bang != std::string::npos) {
      conv = field.substr(bang + 1);
      field.resize(bang);
      GS_CHECK(conv == "r" || conv == "s" || conv == "a", "Unknown conversion specifier {}", conv);
    }
    size_t name_end = field.find_first_of(".[");
    std::string head = field.substr(0, name_end);
    Value v;
    if (head.empty()) {
      GS_CHECK(!used_manual, "cannot switch from manual field specification to automatic field numbering");
      used_auto = true;
      GS_CHECK(auto_index < args.pos.size(), "Replacement index {} out of range for positional args tuple", auto_index);
      v = args.pos[auto_index++];
    } else if (head.find_first_not_of("0123456789") == std::string::npos) {
      GS_CHECK(!used_auto, "cannot switch from automatic field numbering to manual field specification");
      used_manual = true;
      size_t idx = std::stoul(head.substr(0, 9));
      GS_CHECK(idx < args.pos.size(), "Replacement index {} out of range for positional args tuple", idx);
      v = args.pos[idx];
    } else {
      bool found = false;
      for (const auto& [k, val] : args.kw)
        if (k == head) v = val, found = true;
      GS_CHECK(found, "KeyError: '{}'", head);
    }
    // .attr and [key] lookups go through the sandbox like template expressions do.
    size_t p = name_end;
    while (p != std::string::npos && p < field.size()) {
      if (field[p] == '.') {
        size_t e = field.find_first_of(".[", p + 1);
        v = in.getattr(v, field.substr(p + 1, e == std::string::npos ? std::string::npos : e - p - 1));
        p = e;
      } else {
        size_t e = field.find(']', p);
        GS_CHECK(e != std::string::npos, "Missing ']' in format string");
        std::string key = field.substr(p + 1, e - p - 1);
        bool numeric = !key.empty() && key.find_first_not_of("0123456789") == std::string::npos;
        v = in.getitem(v, numeric ? Value::integer(std::stoll(key.substr(0, 18))) : Value::string(key));
        p = e + 1;
      }
    }
    if (conv == "r" || conv == "a") v = Value::string(py_repr(v));
    else if (conv == "s") v = Value::string(py_str(v));
    out += format_value(v, spec);
    check_string_size(out.size());
  }
  return out;
}

}  // namespace gs::jinja
