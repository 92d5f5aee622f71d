#include "chat/jinja/value.h"

#include <algorithm>

#include "chat/jinja/utf8.h"
#include "core/error.h"

namespace gs::jinja {

static thread_local WorkBudget* current_budget = nullptr;

void charge_work(int64_t units) {
  WorkBudget* b = current_budget;
  if (!b) return;
  b->used += units;
  if (b->used > b->limit) throw Error("template exceeded its evaluation budget of {} steps", b->limit);
}

ScopedWorkBudget::ScopedWorkBudget(WorkBudget* b) : previous_(current_budget) { current_budget = b; }
ScopedWorkBudget::~ScopedWorkBudget() { current_budget = previous_; }

static int child_depth(const std::vector<Value>& items) {
  int d = 0;
  for (const auto& v : items) d = std::max(d, v.depth());
  return d + 1;
}

static void check_depth(int depth) {
  GS_CHECK(depth <= kMaxValueDepth, "value nested more than {} levels deep", kMaxValueDepth);
}

Value Value::undefined(std::string hint) {
  Value v;
  v.v_ = UndefinedTag{std::make_shared<const std::string>(std::move(hint))};
  return v;
}
Value Value::none() {
  Value v;
  v.v_ = std::monostate{};
  return v;
}
Value Value::boolean(bool b) {
  Value v;
  v.v_ = b;
  return v;
}
Value Value::integer(int64_t i) {
  Value v;
  v.v_ = i;
  return v;
}
Value Value::number(double d) {
  Value v;
  v.v_ = d;
  return v;
}
Value Value::string(std::string s) {
  charge_work(static_cast<int64_t>(s.size() / 64));
  Value v;
  v.v_ = std::make_shared<const std::string>(std::move(s));
  return v;
}
Value Value::list(std::vector<Value> items) {
  charge_work(static_cast<int64_t>(items.size()));
  auto d = std::make_shared<ListData>();
  d->depth = child_depth(items);
  check_depth(d->depth);
  d->items = std::move(items);
  Value v;
  v.v_ = ListPtr(std::move(d));
  return v;
}
Value Value::tuple(std::vector<Value> items) {
  charge_work(static_cast<int64_t>(items.size()));
  auto d = std::make_shared<ListData>();
  d->depth = child_depth(items);
  check_depth(d->depth);
  d->items = std::move(items);
  d->is_tuple = true;
  Value v;
  v.v_ = ListPtr(std::move(d));
  return v;
}
Value Value::dict(DictData data) {
  charge_work(static_cast<int64_t>(data.items.size()));
  int depth = 0;
  for (const auto& [k, val] : data.items) depth = std::max({depth, k.depth(), val.depth()});
  check_depth(depth + 1);
  Value v;
  v.v_ = DictPtr(std::make_shared<DictData>(std::move(data)));
  return v;
}
Value Value::iterator(std::vector<Value> items, std::string type_name) {
  charge_work(static_cast<int64_t>(items.size()));
  auto d = std::make_shared<IterData>();
  d->depth = child_depth(items);
  check_depth(d->depth);
  d->items = std::move(items);
  d->type_name = std::move(type_name);
  Value v;
  v.v_ = IterPtr(std::move(d));
  return v;
}
Value Value::object(std::shared_ptr<Object> o) {
  Value v;
  v.v_ = ObjPtr(std::move(o));
  return v;
}

bool Value::is_tuple() const { return is_list() && list().is_tuple; }

int64_t Value::as_int() const { return is_bool() ? (as_bool() ? 1 : 0) : std::get<int64_t>(v_); }

double Value::as_double() const {
  if (is_float()) return std::get<double>(v_);
  return static_cast<double>(as_int());
}

std::string Value::undefined_message() const {
  const auto& hint = std::get<UndefinedTag>(v_).hint;
  return hint ? *hint : "undefined value";
}

int Value::depth() const {
  switch (kind()) {
    case Kind::List: return list().depth;
    case Kind::Iterator: return iter().depth;
    case Kind::Dict: {
      int d = 0;
      for (const auto& [k, v] : dict().items) d = std::max({d, k.depth(), v.depth()});
      return d + 1;
    }
    default: return 0;
  }
}

const void* Value::identity() const {
  switch (kind()) {
    case Kind::String: return std::get<StrPtr>(v_).get();
    case Kind::List: return std::get<ListPtr>(v_).get();
    case Kind::Dict: return std::get<DictPtr>(v_).get();
    case Kind::Iterator: return std::get<IterPtr>(v_).get();
    case Kind::Object: return std::get<ObjPtr>(v_).get();
    default: return nullptr;
  }
}

const Value* DictData::find(const std::string& key) const {
  charge_work(static_cast<int64_t>(items.size() / 8));
  for (const auto& kv : items)
    if (kv.first.is_string() && kv.first.str() == key) return &kv.second;
  return nullptr;
}

const Value* DictData::find(const Value& key) const {
  if (key.is_string()) return find(key.str());
  for (const auto& kv : items)
    if (py_equal(kv.first, key)) return &kv.second;
  return nullptr;
}

void DictData::set(Value key, Value value) {
  charge_work(static_cast<int64_t>(items.size() / 4));
  GS_CHECK(!key.is_list() || key.is_tuple(), "unhashable type: 'list'");
  GS_CHECK(!key.is_dict(), "unhashable type: 'dict'");
  for (auto& kv : items) {
    if (py_equal(kv.first, key)) {
      kv.second = std::move(value);
      return;
    }
  }
  items.emplace_back(std::move(key), std::move(value));
}

Value Object::call(Interpreter&, CallArgs&) { throw Error("'{}' object is not callable", type_name()); }

std::string type_name(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined: return "Undefined";
    case Value::Kind::None: return "NoneType";
    case Value::Kind::Bool: return "bool";
    case Value::Kind::Int: return "int";
    case Value::Kind::Float: return "float";
    case Value::Kind::String: return "str";
    case Value::Kind::List: return v.is_tuple() ? "tuple" : "list";
    case Value::Kind::Dict: return "dict";
    case Value::Kind::Iterator: return v.iter().type_name;
    case Value::Kind::Object: return v.obj().type_name();
  }
  return "object";
}

std::string object_type_repr(const Value& v) {
  if (v.is_none()) return "None";
  return type_name(v) + " object";
}

void require_defined(const Value& v) {
  if (v.is_undefined()) throw Error("{}", v.undefined_message());
}

bool truthy(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined:
    case Value::Kind::None: return false;
    case Value::Kind::Bool: return v.as_bool();
    case Value::Kind::Int: return v.as_int() != 0;
    case Value::Kind::Float: return v.as_double() != 0.0;
    case Value::Kind::String: return !v.str().empty();
    case Value::Kind::List: return !v.list().items.empty();
    case Value::Kind::Dict: return !v.dict().items.empty();
    case Value::Kind::Iterator:
    case Value::Kind::Object: return true;  // generators and objects are always true in Python
  }
  return false;
}

bool py_equal(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (!a.is_float() && !b.is_float()) return a.as_int() == b.as_int();
    return a.as_double() == b.as_double();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::Undefined:
    case Value::Kind::None: return true;
    case Value::Kind::String: return a.str() == b.str();
    case Value::Kind::List: {
      const auto &x = a.list(), &y = b.list();
      charge_work(static_cast<int64_t>(std::min(x.items.size(), y.items.size())));
      if (x.is_tuple != y.is_tuple || x.items.size() != y.items.size()) return false;
      for (size_t i = 0; i < x.items.size(); ++i)
        if (!py_equal(x.items[i], y.items[i])) return false;
      return true;
    }
    case Value::Kind::Dict: {
      const auto &x = a.dict(), &y = b.dict();
      if (x.items.size() != y.items.size()) return false;
      charge_work(static_cast<int64_t>(x.items.size()));
      for (const auto& [k, v] : x.items) {
        const Value* other = y.find(k);
        if (!other || !py_equal(v, *other)) return false;
      }
      return true;
    }
    default: return a.identity() == b.identity();
  }
}

bool py_less(const Value& a, const Value& b) {
  require_defined(a);
  require_defined(b);
  if (a.is_number() && b.is_number()) {
    if (!a.is_float() && !b.is_float()) return a.as_int() < b.as_int();
    return a.as_double() < b.as_double();
  }
  if (a.is_string() && b.is_string()) {
    charge_work(static_cast<int64_t>(std::min(a.str().size(), b.str().size()) / 64));
    return a.str() < b.str();
  }  // UTF-8 keeps code point order
  if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
    const auto &x = a.list().items, &y = b.list().items;
    for (size_t i = 0; i < x.size() && i < y.size(); ++i)
      if (!py_equal(x[i], y[i])) return py_less(x[i], y[i]);
    return x.size() < y.size();
  }
  throw Error("'<' not supported between instances of '{}' and '{}'", type_name(a), type_name(b));
}

int py_compare(const Value& a, const Value& b) {
  if (py_less(a, b)) return -1;
  if (py_less(b, a)) return 1;
  return 0;
}

int64_t py_len(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined: return 0;
    case Value::Kind::String: return static_cast<int64_t>(utf8::length(v.str()));
    case Value::Kind::List: return static_cast<int64_t>(v.list().items.size());
    case Value::Kind::Dict: return static_cast<int64_t>(v.dict().items.size());
    default: throw Error("object of type '{}' has no len()", type_name(v));
  }
}

std::vector<Value> py_iterate(const Value& v) {
  if (v.is_string()) charge_work(static_cast<int64_t>(v.str().size()));
  if (v.is_list()) charge_work(static_cast<int64_t>(v.list().items.size()));
  if (v.is_dict()) charge_work(static_cast<int64_t>(v.dict().items.size()));
  switch (v.kind()) {
    case Value::Kind::Undefined: return {};
    case Value::Kind::String: {
      std::vector<Value> out;
      std::string ch;
      for (char32_t cp : utf8::decode(v.str())) {
        ch.clear();
        utf8::append(ch, cp);
        out.push_back(Value::string(ch));
      }
      return out;
    }
    case Value::Kind::List: return v.list().items;
    case Value::Kind::Dict: {
      std::vector<Value> out;
      for (const auto& kv : v.dict().items) out.push_back(kv.first);
      return out;
    }
    case Value::Kind::Iterator: {
      auto& it = v.iter();
      std::vector<Value> out(it.items.begin() + static_cast<std::ptrdiff_t>(it.pos), it.items.end());
      it.pos = it.items.size();
      return out;
    }
    default: throw Error("'{}' object is not iterable", type_name(v));
  }
}

}  // namespace gs::jinja
