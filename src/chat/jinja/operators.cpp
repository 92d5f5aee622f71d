#include "chat/jinja/operators.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <string_view>

#include "chat/jinja/py_format.h"
#include "chat/jinja/utf8.h"
#include "core/error.h"

namespace gs::jinja {

void check_string_size(size_t bytes) {
  GS_CHECK(bytes <= kMaxStringBytes, "string of {} bytes exceeds the template limit of {} bytes", bytes,
           kMaxStringBytes);
}

static const char* op_symbol(BinOp op) {
  switch (op) {
    case BinOp::Add: return "+";
    case BinOp::Sub: return "-";
    case BinOp::Mul: return "*";
    case BinOp::Div: return "/";
    case BinOp::FloorDiv: return "//";
    case BinOp::Mod: return "%";
    case BinOp::Pow: return "** or pow()";
  }
  return "?";
}

[[noreturn]] static void unsupported(BinOp op, const Value& a, const Value& b) {
  throw Error("unsupported operand type(s) for {}: '{}' and '{}'", op_symbol(op), type_name(a), type_name(b));
}

static void check_overflow(bool overflow) {
  GS_CHECK(!overflow, "integer overflow (integers are limited to 64 bits)");
}

static Value repeat(const Value& seq, int64_t n) {
  if (n < 0) n = 0;
  if (seq.is_string()) {
    check_string_size(seq.str().size() * static_cast<size_t>(n));
    std::string out;
    out.reserve(seq.str().size() * static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) out += seq.str();
    return Value::string(std::move(out));
  }
  const auto& items = seq.list().items;
  GS_CHECK(items.size() * static_cast<size_t>(n) <= kMaxStringBytes, "sequence repetition too large");
  std::vector<Value> out;
  for (int64_t i = 0; i < n; ++i) out.insert(out.end(), items.begin(), items.end());
  return seq.is_tuple() ? Value::tuple(std::move(out)) : Value::list(std::move(out));
}

// Python's float floor division and modulo (float_divmod in CPython).
static void float_divmod(double a, double b, double* div, double* mod) {
  GS_CHECK(b != 0.0, "float divmod()");
  double m = std::fmod(a, b);
  double d = (a - m) / b;
  if (m != 0.0) {
    if ((b < 0) != (m < 0)) {
      m += b;
      d -= 1.0;
    }
  } else {
    m = std::copysign(0.0, b);
  }
  double fd;
  if (d != 0.0) {
    fd = std::floor(d);
    if (d - fd > 0.5) fd += 1.0;
  } else {
    fd = std::copysign(0.0, a / b);
  }
  *div = fd;
  *mod = m;
}

static Value arith(BinOp op, const Value& a, const Value& b) {
  bool ints = !a.is_float() && !b.is_float();
  if (ints) {
    int64_t x = a.as_int(), y = b.as_int(), r;
    switch (op) {
      case BinOp::Add:
        check_overflow(__builtin_add_overflow(x, y, &r));
        return Value::integer(r);
      case BinOp::Sub:
        check_overflow(__builtin_sub_overflow(x, y, &r));
        return Value::integer(r);
      case BinOp::Mul:
        check_overflow(__builtin_mul_overflow(x, y, &r));
        return Value::integer(r);
      case BinOp::Div:
        GS_CHECK(y != 0, "division by zero");
        return Value::number(static_cast<double>(x) / static_cast<double>(y));
      case BinOp::FloorDiv:
      case BinOp::Mod: {
        GS_CHECK(y != 0, op == BinOp::Mod ? "integer modulo by zero" : "integer division or modulo by zero");
        GS_CHECK(!(x == INT64_MIN && y == -1), "integer overflow (integers are limited to 64 bits)");
        int64_t q = x / y, m = x % y;
        if (m != 0 && ((m < 0) != (y < 0))) {
          m += y;
          q -= 1;
        }
        return Value::integer(op == BinOp::Mod ? m : q);
      }
      case BinOp::Pow: {
        if (y < 0) {
          GS_CHECK(x != 0, "0.0 cannot be raised to a negative power");
          return Value::number(std::pow(static_cast<double>(x), static_cast<double>(y)));
        }
        int64_t result = 1, base = x;
        while (y > 0) {
          if (y & 1) check_overflow(__builtin_mul_overflow(result, base, &result));
          y >>= 1;
          if (y) check_overflow(__builtin_mul_overflow(base, base, &base));
        }
        return Value::integer(result);
      }
    }
  }
  double x = a.as_double(), y = b.as_double();
  switch (op) {
    case BinOp::Add: return Value::number(x + y);
    case BinOp::Sub: return Value::number(x - y);
    case BinOp::Mul: return Value::number(x * y);
    case BinOp::Div:
      GS_CHECK(y != 0.0, "float division by zero");
      return Value::number(x / y);
    case BinOp::FloorDiv:
    case BinOp::Mod: {
      GS_CHECK(y != 0.0, op == BinOp::Mod ? "float modulo" : "float floor division by zero");
      double d, m;
      float_divmod(x, y, &d, &m);
      return Value::number(op == BinOp::Mod ? m : d);
    }
    case BinOp::Pow: {
      GS_CHECK(!(x == 0.0 && y < 0), "0.0 cannot be raised to a negative power");
      GS_CHECK(!(x < 0 && y != std::floor(y)), "complex results are not supported");
      double r = std::pow(x, y);
      GS_CHECK(!std::isinf(r) || std::isinf(x) || std::isinf(y), "(34, 'Numerical result out of range')");
      return Value::number(r);
    }
  }
  unsupported(op, a, b);
}

Value binary_op(BinOp op, const Value& a, const Value& b) {
  require_defined(a);
  require_defined(b);
  if (a.is_number() && b.is_number()) return arith(op, a, b);
  switch (op) {
    case BinOp::Add:
      if (a.is_string() && b.is_string()) {
        check_string_size(a.str().size() + b.str().size());
        return Value::string(a.str() + b.str());
      }
      if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
        std::vector<Value> items = a.list().items;
        items.insert(items.end(), b.list().items.begin(), b.list().items.end());
        return a.is_tuple() ? Value::tuple(std::move(items)) : Value::list(std::move(items));
      }
      break;
    case BinOp::Mul:
      if ((a.is_string() || a.is_list()) && (b.is_int() || b.is_bool())) return repeat(a, b.as_int());
      if ((b.is_string() || b.is_list()) && (a.is_int() || a.is_bool())) return repeat(b, a.as_int());
      break;
    case BinOp::Mod:
      if (a.is_string()) return Value::string(percent_format(a.str(), b));
      break;
    default: break;
  }
  unsupported(op, a, b);
}

Value negate(const Value& v) {
  require_defined(v);
  if (v.is_float()) return Value::number(-v.as_double());
  if (v.is_int() || v.is_bool()) {
    GS_CHECK(v.as_int() != INT64_MIN, "integer overflow (integers are limited to 64 bits)");
    return Value::integer(-v.as_int());
  }
  throw Error("bad operand type for unary -: '{}'", type_name(v));
}

Value unary_plus(const Value& v) {
  require_defined(v);
  if (v.is_float()) return v;
  if (v.is_int() || v.is_bool()) return Value::integer(v.as_int());
  throw Error("bad operand type for unary +: '{}'", type_name(v));
}

bool contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Value::Kind::Undefined: return false;  // jinja2's Undefined iterates as empty
    case Value::Kind::String:
      if (!item.is_string())
        throw Error("'in <string>' requires string as left operand, not {}", type_name(item));
      charge_work(static_cast<int64_t>(container.str().size() / 16));
      return container.str().find(item.str()) != std::string::npos;
    case Value::Kind::List:
      charge_work(static_cast<int64_t>(container.list().items.size()));
      for (const auto& v : container.list().items)
        if (py_equal(v, item)) return true;
      return false;
    case Value::Kind::Dict:
      if (item.is_list() && !item.is_tuple()) throw Error("unhashable type: 'list'");
      if (item.is_dict()) throw Error("unhashable type: 'dict'");
      return container.dict().find(item) != nullptr;
    case Value::Kind::Iterator: {
      auto& it = container.iter();
      while (it.pos < it.items.size())
        if (py_equal(it.items[it.pos++], item)) return true;
      return false;
    }
    default: throw Error("argument of type '{}' is not iterable", type_name(container));
  }
}

// %s with flags/width/precision ("%-10s", "%.3s"): widths count code points like Python.
static std::string pad_text(const std::string& text, const std::string& spec) {
  bool left = spec.find('-') != std::string::npos;
  size_t i = 1;
  while (i < spec.size() && std::string_view("-+ #0").find(spec[i]) != std::string_view::npos) ++i;
  size_t width = 0;
  while (i < spec.size() && std::isdigit(static_cast<unsigned char>(spec[i])))
    width = std::min<size_t>(width * 10 + static_cast<size_t>(spec[i++] - '0'), kMaxStringBytes);
  std::u32string cps = utf8::decode(text);
  if (i < spec.size() && spec[i] == '.') {
    size_t prec = 0;
    for (++i; i < spec.size() && std::isdigit(static_cast<unsigned char>(spec[i])); ++i)
      prec = std::min<size_t>(prec * 10 + static_cast<size_t>(spec[i] - '0'), kMaxStringBytes);
    if (cps.size() > prec) cps.resize(prec);
  }
  std::string body = utf8::encode(cps);
  if (cps.size() >= width) return body;
  std::string fill(width - cps.size(), ' ');
  return left ? body + fill : fill + body;
}

std::string percent_format(const std::string& format, const Value& args) {
  std::vector<Value> values = args.is_tuple() ? args.list().items : std::vector<Value>{args};
  size_t next = 0;
  std::string out;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] != '%') {
      out += format[i];
      continue;
    }
    GS_CHECK(i + 1 < format.size(), "incomplete format");
    // Flags, width and precision: passed to snprintf for numbers.
    size_t j = i + 1;
    while (j < format.size() && std::string_view("-+ #0").find(format[j]) != std::string_view::npos) ++j;
    while (j < format.size() && std::isdigit(static_cast<unsigned char>(format[j]))) ++j;
    if (j < format.size() && format[j] == '.') {
      ++j;
      while (j < format.size() && std::isdigit(static_cast<unsigned char>(format[j]))) ++j;
    }
    GS_CHECK(j < format.size(), "incomplete format");
    char conv = format[j];
    std::string spec = format.substr(i, j - i);
    i = j;
    if (conv == '%') {
      out += '%';
      continue;
    }
    GS_CHECK(next < values.size(), "not enough arguments for format string");
    const Value& v = values[next++];
    char buf[512];
    switch (conv) {
      case 's':
      case 'r':
      case 'a': out += pad_text(conv == 's' ? py_str(v) : py_repr(v), spec); break;
      case 'd':
      case 'i':
      case 'u':
        GS_CHECK(v.is_number(), "%{} format: a real number is required, not {}", conv, type_name(v));
        std::snprintf(buf, sizeof buf, (spec + "lld").c_str(),
                      static_cast<long long>(v.is_float() ? std::trunc(v.as_double()) : v.as_int()));
        out += buf;
        break;
      case 'f':
      case 'F':
      case 'e':
      case 'E':
      case 'g':
      case 'G':
        GS_CHECK(v.is_number(), "must be real number, not {}", type_name(v));
        std::snprintf(buf, sizeof buf, (spec + conv).c_str(), v.as_double());
        out += buf;
        break;
      case 'x':
      case 'X':
      case 'o':
        GS_CHECK(v.is_int() || v.is_bool(), "%{} format: an integer is required, not {}", conv, type_name(v));
        std::snprintf(buf, sizeof buf, (spec + "ll" + conv).c_str(), static_cast<long long>(v.as_int()));
        out += buf;
        break;
      default: throw Error("unsupported format character '{}'", conv);
    }
  }
  GS_CHECK(next >= values.size() || args.is_dict(), "not all arguments converted during string formatting");
  return out;
}

}  // namespace gs::jinja
