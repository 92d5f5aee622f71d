// Global functions: jinja2's defaults (range, dict, namespace, cycler, joiner) under the
// sandbox's limits, plus what transformers adds for chat templates (raise_exception,
// strftime_now).
#include <cmath>
#include <ctime>

#include "chat/jinja/args.h"
#include "chat/jinja/objects.h"
#include "chat/jinja/py_format.h"
#include "core/error.h"

namespace gs::jinja {

namespace {

// jinja2's sandbox refuses ranges longer than this (MAX_RANGE).
constexpr int64_t kMaxRange = 100000;

int64_t int_arg(const Value& v) {
  if (v.is_int() || v.is_bool()) return v.as_int();
  throw Error("'{}' object cannot be interpreted as an integer", type_name(v));
}

Value range(Interpreter&, CallArgs& args) {
  GS_CHECK(args.kw.empty(), "range() takes no keyword arguments");
  GS_CHECK(!args.pos.empty() && args.pos.size() <= 3, "range expected 1 to 3 arguments, got {}", args.pos.size());
  int64_t start = 0, stop, step = 1;
  if (args.pos.size() == 1) {
    stop = int_arg(args.pos[0]);
  } else {
    start = int_arg(args.pos[0]);
    stop = int_arg(args.pos[1]);
    if (args.pos.size() == 3) step = int_arg(args.pos[2]);
  }
  GS_CHECK(step != 0, "range() arg 3 must not be zero");
  // Length computed in double to stay clear of overflow on hostile bounds.
  double span = step > 0 ? static_cast<double>(stop) - static_cast<double>(start)
                         : static_cast<double>(start) - static_cast<double>(stop);
  double len = span <= 0 ? 0 : std::ceil(span / std::abs(static_cast<double>(step)));
  GS_CHECK(len <= kMaxRange, "Range too big. The sandbox blocks ranges larger than MAX_RANGE ({}).", kMaxRange);
  std::vector<Value> items;
  for (int64_t i = 0, v = start; i < static_cast<int64_t>(len); ++i, v += step) items.push_back(Value::integer(v));
  return Value::list(std::move(items));
}

// dict(*args, **kwargs) as Python builds it: a mapping or pairs, then keywords.
DictData dict_from_args(const CallArgs& args, const char* fn) {
  GS_CHECK(args.pos.size() <= 1, "{} expected at most 1 argument, got {}", fn, args.pos.size());
  DictData d;
  if (!args.pos.empty()) {
    const Value& src = args.pos[0];
    if (src.is_dict()) {
      d = src.dict();
    } else {
      for (const Value& pair : py_iterate(src)) {
        std::vector<Value> kv = py_iterate(pair);
        GS_CHECK(kv.size() == 2, "dictionary update sequence element has length {}; 2 is required", kv.size());
        d.set(kv[0], kv[1]);
      }
    }
  }
  for (const auto& [k, v] : args.kw) d.set(Value::string(k), v);
  return d;
}

std::string strftime_now(const std::string& format) {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  if (format.empty()) return "";
  std::string buf(256 + format.size() * 8, '\0');
  size_t n = std::strftime(buf.data(), buf.size(), format.c_str(), &tm);
  buf.resize(n);
  return buf;
}

Value dict_fn(Interpreter&, CallArgs& args) { return Value::dict(dict_from_args(args, "dict")); }

Value namespace_fn(Interpreter& in, CallArgs& args) {
  auto ns = in.make_object<NamespaceObject>();
  ns->attrs = dict_from_args(args, "namespace");
  return Value::object(ns);
}

Value cycler_fn(Interpreter& in, CallArgs& args) {
  auto c = in.make_object<CyclerObject>();
  c->items = args.pos;
  return Value::object(c);
}

Value joiner_fn(Interpreter& in, CallArgs& args) {
  ArgBinder a("joiner", args, {"sep"});
  std::string sep = a.has(0) ? py_str(*a.get(0)) : ", ";
  auto used = std::make_shared<bool>(false);
  return Value::object(in.make_object<FunctionObject>("joiner", [sep, used](Interpreter&, CallArgs&) {
    if (!*used) {
      *used = true;
      return Value::string("");
    }
    return Value::string(sep);
  }));
}

Value raise_exception_fn(Interpreter&, CallArgs& args) {
  ArgBinder a("raise_exception", args, {"message"});
  throw Error("{}", a.has(0) ? py_str(*a.get(0)) : std::string("raise_exception() called"));
}

Value strftime_now_fn(Interpreter&, CallArgs& args) {
  ArgBinder a("strftime_now", args, {"format"});
  GS_CHECK(a.has(0) && a.get(0)->is_string(), "strftime_now() needs a format string");
  return Value::string(strftime_now(a.get(0)->str()));
}

struct GlobalFunction {
  const char* name;
  Value (*fn)(Interpreter&, CallArgs&);
};

// The one list of globals: what renders see, and what callers may not pass as variables.
constexpr GlobalFunction kGlobalFunctions[] = {
    {"range", range},
    {"dict", dict_fn},
    {"namespace", namespace_fn},
    {"cycler", cycler_fn},
    {"joiner", joiner_fn},
    {"raise_exception", raise_exception_fn},
    {"strftime_now", strftime_now_fn},
};

}  // namespace

std::vector<std::pair<std::string, Value>> builtin_globals(Interpreter& in) {
  std::vector<std::pair<std::string, Value>> g;
  for (const GlobalFunction& f : kGlobalFunctions)
    g.emplace_back(f.name, Value::object(in.make_object<FunctionObject>(f.name, f.fn)));
  return g;
}

const std::vector<std::string>& builtin_global_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const GlobalFunction& f : kGlobalFunctions) n.emplace_back(f.name);
    return n;
  }();
  return names;
}

}  // namespace gs::jinja
