// Filters on strings and scalars: upper, lower, trim, replace, indent, tojson, int, round, ...
// Each follows jinja2 3.1's implementation (arguments, defaults and quirks).
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "chat/jinja/filter_table.h"
#include "chat/jinja/json_value.h"
#include "chat/jinja/objects.h"
#include "chat/jinja/operators.h"
#include "chat/jinja/py_format.h"
#include "chat/jinja/utf8.h"
#include "core/error.h"

namespace gs::jinja {

namespace {

Value str_method(Interpreter& in, const Value& input, const char* method, CallArgs args = {}) {
  return call_str_method(in, py_str(input), method, args);
}

Value f_upper(Interpreter& in, const Value& v, CallArgs& args) {
  ArgBinder("upper", args, {});
  return Value::string(utf8::upper(py_str(v)));
}
Value f_lower(Interpreter& in, const Value& v, CallArgs& args) {
  ArgBinder("lower", args, {});
  return Value::string(utf8::lower(py_str(v)));
}
Value f_capitalize(Interpreter& in, const Value& v, CallArgs& args) {
  ArgBinder("capitalize", args, {});
  return str_method(in, v, "capitalize");
}

// jinja2's title: words start after '-', whitespace, '(', '{', '[' or '<'.
Value f_title(Interpreter& in, const Value& v, CallArgs& args) {
  ArgBinder("title", args, {});
  std::u32string cps = utf8::decode(py_str(v));
  std::string out;
  bool word_start = true;
  for (char32_t c : cps) {
    bool sep = c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || utf8::is_space(c);
    if (sep) {
      utf8::append(out, c);
      word_start = true;
    } else {
      utf8::append(out, word_start ? utf8::to_upper(c) : utf8::to_lower(c));
      word_start = false;
    }
  }
  return Value::string(out);
}

Value f_trim(Interpreter& in, const Value& v, CallArgs& args) {
  ArgBinder a("trim", args, {"chars"});
  CallArgs inner;
  if (a.has(0)) inner.pos.push_back(*a.get(0));
  return call_str_method(in, py_str(v), "strip", inner);
}

Value f_replace(Interpreter& in, const Value& v, CallArgs& args) {
  ArgBinder a("replace", args, {"old", "new", "count"});
  GS_CHECK(a.has(0) && a.has(1), "replace() missing required arguments 'old' and 'new'");
  CallArgs inner;
  inner.pos = {Value::string(py_str(*a.get(0))), Value::string(py_str(*a.get(1)))};
  if (a.has(2) && !a.get(2)->is_none()) inner.pos.push_back(*a.get(2));
  return call_str_method(in, py_str(v), "replace", inner);
}

Value f_string(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder("string", args, {});
  return Value::string(py_str(v));
}

Value f_safe(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder("safe", args, {});
  return Value::string(py_str(v));
}

Value f_escape(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder("escape", args, {});
  std::string out;
  for (char c : py_str(v)) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return Value::string(out);
}

Value f_center(Interpreter& in, const Value& v, CallArgs& args) {
  ArgBinder a("center", args, {"width"});
  CallArgs inner;
  inner.pos.push_back(a.get_or(0, Value::integer(80)));
  return call_str_method(in, py_str(v), "center", inner);
}

Value f_indent(Interpreter& in, const Value& v, CallArgs& args) {
  ArgBinder a("indent", args, {"width", "first", "blank"});
  Value width = a.get_or(0, Value::integer(4));
  std::string indention;
  if (width.is_string()) {
    indention = width.str();
  } else {
    GS_CHECK(width.is_int() || width.is_bool(), "indent width must be an integer or a string");
    check_string_size(static_cast<size_t>(std::max<int64_t>(0, width.as_int())));
    indention.assign(static_cast<size_t>(std::max<int64_t>(0, width.as_int())), ' ');
  }
  bool first = a.has(1) && truthy(*a.get(1)), blank = a.has(2) && truthy(*a.get(2));
  CallArgs none;
  Value lines_v = call_str_method(in, py_str(v) + "\n", "splitlines", none);
  const auto& lines = lines_v.list().items;
  std::string rv;
  if (blank) {
    for (size_t i = 0; i < lines.size(); ++i) {
      if (i) rv += "\n" + indention;
      rv += lines[i].str();
      check_string_size(rv.size());
    }
  } else {
    rv = lines.empty() ? "" : lines[0].str();
    for (size_t i = 1; i < lines.size(); ++i) {
      rv += "\n";
      if (!lines[i].str().empty()) rv += indention;
      rv += lines[i].str();
      check_string_size(rv.size());
    }
  }
  if (first) rv = indention + rv;
  return Value::string(rv);
}

Value f_truncate(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder a("truncate", args, {"length", "killwords", "end", "leeway"});
  std::u32string s = utf8::decode(py_str(v));
  int64_t length = a.get_or(0, Value::integer(255)).as_int();
  bool killwords = a.has(1) && truthy(*a.get(1));
  std::u32string end = utf8::decode(a.has(2) ? py_str(*a.get(2)) : "...");
  int64_t leeway = a.has(3) && !a.get(3)->is_none() ? a.get(3)->as_int() : 5;
  auto end_len = static_cast<int64_t>(end.size());
  GS_CHECK(length >= end_len, "expected length >= {}, got {}", end_len, length);
  GS_CHECK(leeway >= 0, "expected leeway >= 0, got {}", leeway);
  if (static_cast<int64_t>(s.size()) <= length + leeway) return Value::string(utf8::encode(s));
  std::u32string head = s.substr(0, static_cast<size_t>(length - end_len));
  if (!killwords) {
    size_t sp = head.rfind(U' ');
    if (sp != std::u32string::npos) head.resize(sp);
  }
  return Value::string(utf8::encode(head + end));
}

Value f_wordcount(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder("wordcount", args, {});
  int64_t n = 0;
  bool in_word = false;
  for (char32_t c : utf8::decode(py_str(v))) {
    bool w = utf8::is_alpha(c) || utf8::is_digit(c) || c == '_';
    if (w && !in_word) ++n;
    in_word = w;
  }
  return Value::integer(n);
}

Value f_format(Interpreter&, const Value& v, CallArgs& args) {
  GS_CHECK(args.pos.empty() || args.kw.empty(), "can't handle positional and keyword arguments at the same time");
  if (!args.kw.empty()) {
    DictData d;
    for (auto& [k, val] : args.kw) d.set(Value::string(k), val);
    return Value::string(percent_format(py_str(v), Value::dict(std::move(d))));
  }
  return Value::string(percent_format(py_str(v), Value::tuple(args.pos)));
}

// transformers replaces jinja2's tojson: json.dumps(x, ensure_ascii=False, indent=None,
// separators=None, sort_keys=False), so no HTML escaping.
Value f_tojson(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder a("tojson", args, {"ensure_ascii", "indent", "separators", "sort_keys"});
  JsonDumpOptions opt;
  opt.ensure_ascii = a.has(0) && truthy(*a.get(0));
  if (a.has(1) && !a.get(1)->is_none()) {
    const Value& ind = *a.get(1);
    if (ind.is_string()) {
      opt.indent = ind.str();
    } else {
      GS_CHECK(ind.is_int() || ind.is_bool(), "tojson indent must be an integer or a string");
      opt.indent = std::string(static_cast<size_t>(std::clamp<int64_t>(ind.as_int(), 0, 1024)), ' ');
    }
  }
  if (a.has(2) && !a.get(2)->is_none()) {
    std::vector<Value> seps = py_iterate(*a.get(2));
    GS_CHECK(seps.size() == 2 && seps[0].is_string() && seps[1].is_string(),
             "tojson separators must be a pair of strings");
    opt.item_separator = seps[0].str();
    opt.key_separator = seps[1].str();
  }
  opt.sort_keys = a.has(3) && truthy(*a.get(3));
  return Value::string(to_json(v, opt));
}

// Python's int(str, base): optional sign and whitespace, underscores between digits.
std::optional<int64_t> parse_int(const std::string& text, int64_t base) {
  std::string s(utf8::strip(text));
  if (s.empty()) return std::nullopt;
  size_t i = 0;
  bool neg = false;
  if (s[0] == '+' || s[0] == '-') neg = s[i++] == '-';
  if (base == 16 || base == 8 || base == 2) {
    char p = base == 16 ? 'x' : base == 8 ? 'o' : 'b';
    if (i + 1 < s.size() && s[i] == '0' && (s[i + 1] | 0x20) == p) i += 2;
  }
  std::string digits;
  bool prev_digit = false;
  for (; i < s.size(); ++i) {
    if (s[i] == '_' && prev_digit && i + 1 < s.size() && s[i + 1] != '_') {
      prev_digit = false;
      continue;
    }
    int d = std::isdigit(static_cast<unsigned char>(s[i])) ? s[i] - '0'
            : std::isalpha(static_cast<unsigned char>(s[i])) ? (s[i] | 0x20) - 'a' + 10 : 99;
    if (d >= base) return std::nullopt;
    digits += s[i];
    prev_digit = true;
  }
  if (digits.empty()) return std::nullopt;
  errno = 0;
  long long v = std::strtoll(digits.c_str(), nullptr, static_cast<int>(base));
  GS_CHECK(errno != ERANGE, "integer literal too large: {}", text);
  return neg ? -v : v;
}

std::optional<double> parse_float(const Value& v) {
  if (v.is_number()) return v.as_double();
  if (!v.is_string()) return std::nullopt;
  std::string s(utf8::strip(v.str()));
  std::string clean;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '_' && i > 0 && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i - 1])) &&
        std::isdigit(static_cast<unsigned char>(s[i + 1])))
      continue;
    clean += s[i];
  }
  if (clean.empty() || clean.find_first_of("xXpP") != std::string::npos) return std::nullopt;
  char* end = nullptr;
  double d = std::strtod(clean.c_str(), &end);
  if (end != clean.c_str() + clean.size()) return std::nullopt;
  return d;
}

int64_t float_to_int(double d) {
  GS_CHECK(!std::isinf(d), "cannot convert float infinity to integer");
  GS_CHECK(std::abs(d) < 9.2e18, "integer too large (integers are limited to 64 bits)");
  return static_cast<int64_t>(std::trunc(d));
}

Value f_int(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder a("int", args, {"default", "base"});
  Value def = a.get_or(0, Value::integer(0));
  int64_t base = a.get_or(1, Value::integer(10)).as_int();
  if (v.is_int() || v.is_bool()) return Value::integer(v.as_int());
  if (v.is_float()) {
    if (std::isnan(v.as_double())) return def;
    return Value::integer(float_to_int(v.as_double()));
  }
  if (v.is_string()) {
    GS_CHECK(base == 0 || (base >= 2 && base <= 36), "int() base must be >= 2 and <= 36, or 0");
    if (auto i = parse_int(v.str(), base == 0 ? 10 : base)) return Value::integer(*i);
  }
  // jinja2's quirk: "42.23"|int is 42.
  if (auto d = parse_float(v)) {
    if (std::isnan(*d)) return def;
    return Value::integer(float_to_int(*d));
  }
  return def;
}

Value f_float(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder a("float", args, {"default"});
  if (auto d = parse_float(v)) return Value::number(*d);
  return a.get_or(0, Value::number(0.0));
}

Value f_abs(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder("abs", args, {});
  require_defined(v);
  if (v.is_float()) return Value::number(std::abs(v.as_double()));
  if (v.is_int() || v.is_bool()) {
    GS_CHECK(v.as_int() != INT64_MIN, "integer overflow (integers are limited to 64 bits)");
    return Value::integer(std::abs(v.as_int()));
  }
  throw Error("bad operand type for abs(): '{}'", type_name(v));
}

Value f_round(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder a("round", args, {"precision", "method"});
  int64_t precision = a.get_or(0, Value::integer(0)).as_int();
  std::string method = a.has(1) ? py_str(*a.get(1)) : "common";
  GS_CHECK(method == "common" || method == "ceil" || method == "floor", "method must be common, ceil or floor");
  require_defined(v);
  GS_CHECK(v.is_number(), "type {} doesn't define __round__ method", type_name(v));
  if (method == "common") {
    if (!v.is_float()) return Value::integer(v.as_int());  // round(int, n) stays an int for n >= 0
    double d = v.as_double();
    if (std::isnan(d) || std::isinf(d) || precision > 300) return v;
    if (precision < 0) {
      double scale = std::pow(10.0, static_cast<double>(-precision));
      return Value::number(std::nearbyint(d / scale) * scale);
    }
    // printf rounds the exact binary value half-to-even, like Python's correctly rounded round().
    char buf[512];
    std::snprintf(buf, sizeof buf, "%.*f", static_cast<int>(precision), d);
    return Value::number(std::strtod(buf, nullptr));
  }
  double scale = std::pow(10.0, static_cast<double>(precision));
  double x = v.as_double() * scale;
  return Value::number((method == "ceil" ? std::ceil(x) : std::floor(x)) / scale);
}

}  // namespace

void add_text_filters(FilterTable& t) {
  t["upper"] = f_upper;
  t["lower"] = f_lower;
  t["capitalize"] = f_capitalize;
  t["title"] = f_title;
  t["trim"] = f_trim;
  t["replace"] = f_replace;
  t["string"] = f_string;
  t["safe"] = f_safe;
  t["escape"] = f_escape;
  t["e"] = f_escape;
  t["forceescape"] = f_escape;
  t["center"] = f_center;
  t["indent"] = f_indent;
  t["truncate"] = f_truncate;
  t["wordcount"] = f_wordcount;
  t["format"] = f_format;
  t["tojson"] = f_tojson;
  t["int"] = f_int;
  t["float"] = f_float;
  t["abs"] = f_abs;
  t["round"] = f_round;
}

}  // namespace gs::jinja
