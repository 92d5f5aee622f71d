#include "chat/jinja/objects.h"

#include <algorithm>

#include "chat/jinja/py_format.h"
#include "core/error.h"

namespace gs::jinja {

// Like Python's reprlib guard on the attribute dict: a namespace inside itself prints {...}.
std::string NamespaceObject::repr() const {
  static thread_local std::vector<const NamespaceObject*> active;
  if (std::find(active.begin(), active.end(), this) != active.end()) return "<Namespace {...}>";
  active.push_back(this);
  struct Pop {
    ~Pop() { active.pop_back(); }
  } pop;
  return "<Namespace " + py_str(Value::dict(attrs)) + ">";
}

std::optional<Value> NamespaceObject::getattr(const std::string& name) {
  if (const Value* v = attrs.find(name)) return *v;
  return std::nullopt;
}

std::string LoopObject::repr() const {
  return "<LoopContext " + std::to_string(index + 1) + "/" + std::to_string(items.size()) + ">";
}

std::optional<Value> LoopObject::getattr(const std::string& name) {
  auto n = static_cast<int64_t>(items.size());
  auto i = static_cast<int64_t>(index);
  if (name == "index0") return Value::integer(i);
  if (name == "index") return Value::integer(i + 1);
  if (name == "revindex") return Value::integer(n - i);
  if (name == "revindex0") return Value::integer(n - i - 1);
  if (name == "first") return Value::boolean(i == 0);
  if (name == "last") return Value::boolean(i == n - 1);
  if (name == "length") return Value::integer(n);
  if (name == "depth") return Value::integer(depth);
  if (name == "depth0") return Value::integer(depth - 1);
  if (name == "previtem")
    return i > 0 ? items[static_cast<size_t>(i - 1)] : Value::undefined("there is no previous item");
  if (name == "nextitem")
    return i + 1 < n ? items[static_cast<size_t>(i + 1)] : Value::undefined("there is no next item");
  if (name == "cycle") {
    size_t at = index;
    return Value::object(std::make_shared<FunctionObject>("cycle", [at](Interpreter&, CallArgs& args) {
      GS_CHECK(!args.pos.empty(), "no items for cycling given");
      return args.pos[at % args.pos.size()];
    }));
  }
  if (name == "changed") {
    // The closure refers back to this loop; the loop is registered with the interpreter, which
    // outlives every value of the render.
    LoopObject* self = this;
    return Value::object(std::make_shared<FunctionObject>("changed", [self](Interpreter&, CallArgs& args) {
      Value current = Value::tuple(args.pos);
      if (self->last_changed && py_equal(*self->last_changed, current)) return Value::boolean(false);
      self->last_changed = current;
      return Value::boolean(true);
    }));
  }
  return std::nullopt;
}

Value LoopObject::call(Interpreter& in, CallArgs& args) {
  GS_CHECK(stmt, "'LoopContext' object is not callable");
  GS_CHECK(args.pos.size() == 1 && args.kw.empty(), "loop() takes exactly one argument");
  return Value::string(in.render_recursive_loop(*stmt, frame, args.pos[0], depth + 1));
}

std::string BoundMethodObject::repr() const {
  return "<built-in method " + name + " of " + jinja::type_name(self) + " object>";
}

Value BoundMethodObject::call(Interpreter& in, CallArgs& args) { return call_method(in, self, name, args); }

std::optional<Value> CyclerObject::getattr(const std::string& name) {
  CyclerObject* self = this;  // registered with the interpreter, see LoopObject::getattr
  if (name == "current") return items.empty() ? Value::none() : items[pos % items.size()];
  if (name == "reset")
    return Value::object(std::make_shared<FunctionObject>("reset", [self](Interpreter&, CallArgs&) {
      self->pos = 0;
      return Value::none();
    }));
  if (name == "next")
    return Value::object(std::make_shared<FunctionObject>("next", [self](Interpreter&, CallArgs&) {
      GS_CHECK(!self->items.empty(), "cycler has no items");
      Value v = self->items[self->pos % self->items.size()];
      self->pos = (self->pos + 1) % self->items.size();
      return v;
    }));
  return std::nullopt;
}

}  // namespace gs::jinja
