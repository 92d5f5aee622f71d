// The objects templates work with besides plain data: namespace(), the `loop` variable, macros,
// builtin functions and methods bound to a value.
#pragma once
#include <functional>
#include <optional>
#include <string>

#include "chat/jinja/ast.h"
#include "chat/jinja/interpreter.h"
#include "chat/jinja/value.h"

namespace gs::jinja {

// namespace(): the one mutable object of the sandbox ({% set ns.attr = ... %}).
class NamespaceObject : public Object {
 public:
  DictData attrs;
  std::string type_name() const override { return "Namespace"; }
  std::string repr() const override;
  std::optional<Value> getattr(const std::string& name) override;
  void clear() override { attrs.items.clear(); }
};

// The `loop` variable of a for loop.
class LoopObject : public Object {
 public:
  std::vector<Value> items;
  size_t index = 0;
  int depth = 1;
  const ForStmt* stmt = nullptr;  // set for `recursive` loops: calling loop(...) recurses
  FramePtr frame;                 // the scope the loop runs in (for recursion)
  std::optional<Value> last_changed;

  std::string type_name() const override { return "LoopContext"; }
  std::string repr() const override;
  std::optional<Value> getattr(const std::string& name) override;
  bool callable() const override { return stmt != nullptr; }
  Value call(Interpreter& in, CallArgs& args) override;
  void clear() override {
    items.clear();
    frame.reset();
    last_changed.reset();
  }
};

class MacroObject : public Object {
 public:
  MacroObject(const MacroStmt* d, FramePtr c) : def(d), closure(std::move(c)) {}
  const MacroStmt* def;
  FramePtr closure;
  std::string type_name() const override { return "Macro"; }
  std::string repr() const override { return "<Macro '" + def->name + "'>"; }
  bool callable() const override { return true; }
  Value call(Interpreter& in, CallArgs& args) override { return in.call_macro(*def, closure, args); }
  void clear() override { closure.reset(); }
};

class FunctionObject : public Object {
 public:
  using Fn = std::function<Value(Interpreter&, CallArgs&)>;
  FunctionObject(std::string n, Fn f) : name(std::move(n)), fn(std::move(f)) {}
  std::string name;
  Fn fn;
  std::string type_name() const override { return "builtin_function_or_method"; }
  std::string repr() const override { return "<built-in function " + name + ">"; }
  bool callable() const override { return true; }
  Value call(Interpreter& in, CallArgs& args) override { return fn(in, args); }
};

// `"abc".upper` without calling it.
class BoundMethodObject : public Object {
 public:
  BoundMethodObject(Value s, std::string n) : self(std::move(s)), name(std::move(n)) {}
  Value self;
  std::string name;
  std::string type_name() const override { return "builtin_function_or_method"; }
  std::string repr() const override;
  bool callable() const override { return true; }
  Value call(Interpreter& in, CallArgs& args) override;
  void clear() override { self = Value(); }
};

// cycler(...) and joiner(sep) from jinja2's default globals.
class CyclerObject : public Object {
 public:
  std::vector<Value> items;
  size_t pos = 0;
  std::string type_name() const override { return "Cycler"; }
  std::optional<Value> getattr(const std::string& name) override;
  void clear() override { items.clear(); }
};

// ---- methods of builtin types (methods.cpp) ----
enum class MethodAccess { None, Safe, Unsafe };
// Whether `self` (str, list, tuple, dict) has a Python attribute `name`, and whether the
// immutable sandbox allows it (list.append & co. are refused).
MethodAccess method_access(const Value& self, const std::string& name);
Value call_method(Interpreter& in, const Value& self, const std::string& name, CallArgs& args);
Value call_str_method(Interpreter& in, const std::string& self, const std::string& name, CallArgs& args);

// ---- globals (builtins.cpp) ----
std::vector<std::pair<std::string, Value>> builtin_globals(Interpreter& in);
// Their names (range, dict, namespace, ...), for callers that must not replace them.
const std::vector<std::string>& builtin_global_names();

}  // namespace gs::jinja
