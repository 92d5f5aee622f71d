// Which Python attributes builtin types expose to templates, and the methods of list, tuple and
// dict (string methods live in methods_str.cpp).
#include <algorithm>
#include <array>

#include "chat/jinja/args.h"
#include "chat/jinja/objects.h"
#include "chat/jinja/py_format.h"
#include "core/error.h"

namespace gs::jinja {

namespace {

bool in_list(const std::string& name, std::initializer_list<const char*> names) {
  return std::any_of(names.begin(), names.end(), [&](const char* n) { return name == n; });
}

const std::initializer_list<const char*> kStrMethods = {
    "capitalize", "casefold", "center", "count", "encode", "endswith", "expandtabs", "find", "format",
    "format_map", "index", "isalnum", "isalpha", "isascii", "isdecimal", "isdigit", "isidentifier", "islower",
    "isnumeric", "isprintable", "isspace", "istitle", "isupper", "join", "ljust", "lower", "lstrip", "maketrans",
    "partition", "removeprefix", "removesuffix", "replace", "rfind", "rindex", "rjust", "rpartition", "rsplit",
    "rstrip", "split", "splitlines", "startswith", "strip", "swapcase", "title", "translate", "upper", "zfill"};

int64_t index_of(const std::vector<Value>& items, const Value& x, const ArgBinder& a) {
  auto n = static_cast<int64_t>(items.size());
  auto norm = [&](const Value* v, int64_t def) {
    if (!v) return def;
    int64_t i = v->as_int();
    if (i < 0) i = std::max<int64_t>(0, i + n);
    return std::min(i, n);
  };
  int64_t start = norm(a.get(1), 0), end = norm(a.get(2), n);
  for (int64_t i = start; i < end; ++i)
    if (py_equal(items[static_cast<size_t>(i)], x)) return i;
  throw Error("{} is not in list", py_repr(x));
}

Value call_list_method(const Value& self, const std::string& name, CallArgs& args) {
  const auto& items = self.list().items;
  if (name == "count") {
    ArgBinder a("count", args, {"value"});
    GS_CHECK(a.has(0), "count() takes exactly one argument (0 given)");
    return Value::integer(std::count_if(items.begin(), items.end(), [&](const Value& v) {
      return py_equal(v, *a.get(0));
    }));
  }
  if (name == "index") {
    ArgBinder a("index", args, {"value", "start", "stop"});
    GS_CHECK(a.has(0), "index expected at least 1 argument, got 0");
    return Value::integer(index_of(items, *a.get(0), a));
  }
  if (name == "copy") {
    ArgBinder a("copy", args, {});
    return Value::list(items);
  }
  throw Error("method '{}' of '{}' objects is not supported", name, type_name(self));
}

Value call_dict_method(const Value& self, const std::string& name, CallArgs& args) {
  const DictData& d = self.dict();
  if (name == "get") {
    ArgBinder a("get", args, {"key", "default"});
    GS_CHECK(a.has(0), "get expected at least 1 argument, got 0");
    if (const Value* v = d.find(*a.get(0))) return *v;
    return a.get_or(1, Value::none());
  }
  if (name == "keys" || name == "values" || name == "items") {
    ArgBinder a(name, args, {});
    std::vector<Value> out;
    for (const auto& [k, v] : d.items) {
      if (name == "keys") out.push_back(k);
      else if (name == "values") out.push_back(v);
      else out.push_back(Value::tuple({k, v}));
    }
    return Value::list(std::move(out));
  }
  if (name == "copy") {
    ArgBinder a("copy", args, {});
    return self;
  }
  throw Error("method '{}' of 'dict' objects is not supported", name);
}

}  // namespace

MethodAccess method_access(const Value& self, const std::string& name) {
  if (name.empty() || name[0] == '_') return MethodAccess::None;  // the sandbox hides private attributes
  switch (self.kind()) {
    case Value::Kind::String: return in_list(name, kStrMethods) ? MethodAccess::Safe : MethodAccess::None;
    case Value::Kind::List:
      if (in_list(name, {"count", "index"})) return MethodAccess::Safe;
      if (self.is_tuple()) return MethodAccess::None;
      if (name == "copy") return MethodAccess::Safe;
      if (in_list(name, {"append", "clear", "extend", "insert", "pop", "remove", "reverse", "sort"}))
        return MethodAccess::Unsafe;
      return MethodAccess::None;
    case Value::Kind::Dict:
      if (in_list(name, {"copy", "fromkeys", "get", "items", "keys", "values"})) return MethodAccess::Safe;
      if (in_list(name, {"clear", "pop", "popitem", "setdefault", "update"})) return MethodAccess::Unsafe;
      return MethodAccess::None;
    default: return MethodAccess::None;
  }
}

Value call_method(Interpreter& in, const Value& self, const std::string& name, CallArgs& args) {
  if (self.is_string()) return call_str_method(in, self.str(), name, args);
  if (self.is_list()) return call_list_method(self, name, args);
  if (self.is_dict()) return call_dict_method(self, name, args);
  throw Error("'{}' object has no attribute '{}'", type_name(self), name);
}

}  // namespace gs::jinja
