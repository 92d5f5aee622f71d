// The values a Jinja template computes with, modelled on the Python objects jinja2 sees:
// Undefined, None, bool, int, float, str, list/tuple, dict (insertion ordered), one-shot iterators
// (what jinja2's map/select/... filters return) and objects (namespace, loop, macros, functions).
// Lists and dicts are immutable once built (the sandbox forbids mutating them), so sharing them
// between values is safe; only namespaces mutate.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace gs::jinja {

class Value;
class Object;
class Interpreter;
struct ListData;
struct DictData;
struct IterData;

// Positional and keyword arguments of a call, in source order.
struct CallArgs {
  std::vector<Value> pos;
  std::vector<std::pair<std::string, Value>> kw;
};

// Work accounting: building values and iterating charges the budget of the render running on
// this thread (if any), so that no template can make a long-running render out of cheap-looking
// steps (a loop building a 100000-item range on every iteration, say). Throws gs::Error once
// the budget is spent.
void charge_work(int64_t units);
struct WorkBudget {
  int64_t used = 0;
  int64_t limit = 0;
};
// Makes `b` the budget charge_work() draws from on this thread while the scope lives.
class ScopedWorkBudget {
 public:
  explicit ScopedWorkBudget(WorkBudget* b);
  ~ScopedWorkBudget();
  ScopedWorkBudget(const ScopedWorkBudget&) = delete;
  ScopedWorkBudget& operator=(const ScopedWorkBudget&) = delete;

 private:
  WorkBudget* previous_;
};

// Deepest nesting of lists/dicts a value may have: keeps recursive printing, comparison and
// destruction of hostile values far away from the stack limit.
inline constexpr int kMaxValueDepth = 256;

class Value {
 public:
  enum class Kind : uint8_t { Undefined, None, Bool, Int, Float, String, List, Dict, Iterator, Object };

  Value() = default;  // Undefined without a hint
  static Value undefined(std::string hint);
  static Value none();
  static Value boolean(bool b);
  static Value integer(int64_t i);
  static Value number(double d);
  static Value string(std::string s);
  static Value list(std::vector<Value> items);
  static Value tuple(std::vector<Value> items);
  static Value dict(DictData d);
  // A one-shot iterator over `items`; `type_name` is the Python type it stands for (generator, ...).
  static Value iterator(std::vector<Value> items, std::string type_name = "generator");
  static Value object(std::shared_ptr<Object> o);

  Kind kind() const { return static_cast<Kind>(v_.index()); }
  bool is_undefined() const { return kind() == Kind::Undefined; }
  bool is_none() const { return kind() == Kind::None; }
  bool is_bool() const { return kind() == Kind::Bool; }
  bool is_int() const { return kind() == Kind::Int; }  // excludes bool, like jinja's `integer` test
  bool is_float() const { return kind() == Kind::Float; }
  bool is_number() const { return is_bool() || is_int() || is_float(); }
  bool is_string() const { return kind() == Kind::String; }
  bool is_list() const { return kind() == Kind::List; }  // list or tuple
  bool is_tuple() const;
  bool is_dict() const { return kind() == Kind::Dict; }
  bool is_iterator() const { return kind() == Kind::Iterator; }
  bool is_object() const { return kind() == Kind::Object; }

  bool as_bool() const { return std::get<bool>(v_); }
  int64_t as_int() const;     // bool or int
  double as_double() const;   // bool, int or float
  const std::string& str() const { return *std::get<StrPtr>(v_); }
  const ListData& list() const { return *std::get<ListPtr>(v_); }
  const DictData& dict() const { return *std::get<DictPtr>(v_); }
  IterData& iter() const { return *std::get<IterPtr>(v_); }
  Object& obj() const { return *std::get<ObjPtr>(v_); }
  const std::shared_ptr<Object>& obj_ptr() const { return std::get<ObjPtr>(v_); }
  // The message jinja2 raises when an undefined value is used ("'x' is undefined").
  std::string undefined_message() const;
  // Nesting depth of lists/dicts/iterators (0 for everything else).
  int depth() const;
  // Identity of the shared payload (containers/objects), for the `sameas` test.
  const void* identity() const;

 private:
  struct UndefinedTag {
    std::shared_ptr<const std::string> hint;
  };
  using StrPtr = std::shared_ptr<const std::string>;
  using ListPtr = std::shared_ptr<const ListData>;
  using DictPtr = std::shared_ptr<const DictData>;
  using IterPtr = std::shared_ptr<IterData>;
  using ObjPtr = std::shared_ptr<Object>;
  std::variant<UndefinedTag, std::monostate, bool, int64_t, double, StrPtr, ListPtr, DictPtr, IterPtr, ObjPtr> v_;
};

struct ListData {
  std::vector<Value> items;
  bool is_tuple = false;
  int depth = 1;
};

// A Python dict: keys compare with Python equality (1 == 1.0 == True), insertion ordered.
struct DictData {
  std::vector<std::pair<Value, Value>> items;
  const Value* find(const Value& key) const;
  const Value* find(const std::string& key) const;
  void set(Value key, Value value);  // keeps the position of an existing key, like Python
};

struct IterData {
  std::vector<Value> items;
  size_t pos = 0;
  std::string type_name;
  int depth = 1;
};

// Objects with behaviour: namespace, loop, macros, builtin functions, bound methods.
class Object {
 public:
  virtual ~Object() = default;
  virtual std::string type_name() const = 0;
  virtual std::string repr() const { return "<" + type_name() + " object>"; }
  // nullopt when the object has no such attribute.
  virtual std::optional<Value> getattr(const std::string& name) { return std::nullopt; }
  virtual bool callable() const { return false; }
  virtual Value call(Interpreter& in, CallArgs& args);
  // Drops references to other values (breaks reference cycles when a render ends).
  virtual void clear() {}
};

// ---- Python semantics ----------------------------------------------------------------------
std::string type_name(const Value& v);         // Python type name: 'str', 'dict', 'NoneType', ...
std::string object_type_repr(const Value& v);  // jinja2's object_type_repr: 'dict object', 'None'
bool truthy(const Value& v);
bool py_equal(const Value& a, const Value& b);
bool py_less(const Value& a, const Value& b);  // throws TypeError-like gs::Error when unorderable
int py_compare(const Value& a, const Value& b);  // -1/0/1 through py_less and py_equal
// len(); throws when the value has no length (jinja's Undefined has length 0).
int64_t py_len(const Value& v);
// iter(): the items a for loop sees (dict -> keys, str -> characters); consumes iterators.
std::vector<Value> py_iterate(const Value& v);
// Throws gs::Error if `v` is unusable because it is undefined (jinja2's UndefinedError).
void require_defined(const Value& v);

}  // namespace gs::jinja
