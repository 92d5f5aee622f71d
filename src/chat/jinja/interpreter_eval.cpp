// Expression evaluation and the attribute/item/call protocol of jinja2's sandbox.
#include <optional>

#include "chat/jinja/interpreter.h"
#include "chat/jinja/objects.h"
#include "chat/jinja/operators.h"
#include "chat/jinja/py_format.h"
#include "chat/jinja/registry.h"
#include "chat/jinja/utf8.h"
#include "core/error.h"

namespace gs::jinja {

namespace {

std::string key_repr(const Value& key) { return py_repr(key); }

Value missing(const Value& obj, const Value& key) {
  if (key.is_string()) return Value::undefined("'" + object_type_repr(obj) + "' has no attribute '" + key.str() + "'");
  return Value::undefined(object_type_repr(obj) + " has no element " + key_repr(key));
}

std::optional<int64_t> slice_bound(const Value* v) {
  if (!v || v->is_none()) return std::nullopt;
  if (v->is_int() || v->is_bool()) return v->as_int();
  throw Error("slice indices must be integers or None or have an __index__ method");
}

// Python's slice.indices() followed by the selection.
template <typename Seq>
Seq take_slice(const Seq& seq, const Value* start_v, const Value* stop_v, const Value* step_v) {
  int64_t len = static_cast<int64_t>(seq.size());
  int64_t step = slice_bound(step_v).value_or(1);
  if (step == 0) throw Error("slice step cannot be zero");
  auto clamp = [&](std::optional<int64_t> b, int64_t def) -> int64_t {
    if (!b) return def;
    int64_t x = *b;
    if (x < 0) {
      x += len;
      if (x < 0) x = step < 0 ? -1 : 0;
    } else if (x >= len) {
      x = step < 0 ? len - 1 : len;
    }
    return x;
  };
  int64_t start = clamp(slice_bound(start_v), step < 0 ? len - 1 : 0);
  int64_t stop = clamp(slice_bound(stop_v), step < 0 ? -1 : len);
  Seq out;
  if (step > 0)
    for (int64_t i = start; i < stop; i += step) out.push_back(seq[static_cast<size_t>(i)]);
  else
    for (int64_t i = start; i > stop; i += step) out.push_back(seq[static_cast<size_t>(i)]);
  return out;
}

}  // namespace

Value Interpreter::getattr(const Value& obj, const std::string& name) {
  require_defined(obj);
  if (obj.is_object()) {
    if (auto v = obj.obj().getattr(name)) return *v;
    return missing(obj, Value::string(name));
  }
  switch (method_access(obj, name)) {
    case MethodAccess::Safe: return Value::object(make_object<BoundMethodObject>(obj, name));
    case MethodAccess::Unsafe:
      return Value::undefined("access to attribute '" + name + "' of '" + type_name(obj) + "' object is unsafe.");
    case MethodAccess::None: break;
  }
  if (obj.is_dict())
    if (const Value* v = obj.dict().find(name)) return *v;
  return missing(obj, Value::string(name));
}

Value Interpreter::getitem(const Value& obj, const Value& key) {
  require_defined(obj);
  switch (obj.kind()) {
    case Value::Kind::Dict:
      if (key.is_list() && !key.is_tuple()) break;
      if (const Value* v = obj.dict().find(key)) return *v;
      break;
    case Value::Kind::List:
    case Value::Kind::String:
      if (key.is_int() || key.is_bool()) {
        int64_t len = py_len(obj), i = key.as_int();
        if (i < 0) i += len;
        if (i < 0 || i >= len) return missing(obj, key);
        if (obj.is_list()) return obj.list().items[static_cast<size_t>(i)];
        std::u32string cps = utf8::decode(obj.str());
        std::string ch;
        utf8::append(ch, cps[static_cast<size_t>(i)]);
        return Value::string(ch);
      }
      break;
    default: break;
  }
  // obj[key] failed: jinja2 falls back to getattr(obj, key) for string keys.
  if (key.is_string()) return getattr(obj, key.str());
  return missing(obj, key);
}

Value Interpreter::eval_getitem(const GetitemExpr& g, const FramePtr& frame) {
  Value obj = eval(*g.obj, frame);
  if (g.arg->kind != ExprKind::Slice) return getitem(obj, eval(*g.arg, frame));
  const auto& s = static_cast<const SliceExpr&>(*g.arg);
  std::optional<Value> start, stop, step;
  if (s.start) start = eval(*s.start, frame);
  if (s.stop) stop = eval(*s.stop, frame);
  if (s.step) step = eval(*s.step, frame);
  auto ptr = [](const std::optional<Value>& v) { return v ? &*v : nullptr; };
  require_defined(obj);
  if (obj.is_string()) {
    std::u32string cps = utf8::decode(obj.str());
    return Value::string(utf8::encode(take_slice(cps, ptr(start), ptr(stop), ptr(step))));
  }
  if (obj.is_list()) {
    auto items = take_slice(obj.list().items, ptr(start), ptr(stop), ptr(step));
    return obj.is_tuple() ? Value::tuple(std::move(items)) : Value::list(std::move(items));
  }
  return Value::undefined(object_type_repr(obj) + " has no element slice");
}

Value Interpreter::call(const Value& callee, CallArgs& args) {
  require_defined(callee);
  if (callee.is_object() && callee.obj().callable()) return callee.obj().call(*this, args);
  throw Error("'{}' object is not callable", type_name(callee));
}

CallArgs Interpreter::eval_args(const CallArgsExpr& a, const FramePtr& frame) {
  CallArgs out;
  for (const auto& e : a.pos) out.pos.push_back(eval(*e, frame));
  for (const auto& [name, e] : a.kw) out.kw.emplace_back(name, eval(*e, frame));
  if (a.dyn_args)
    for (auto& v : py_iterate(eval(*a.dyn_args, frame))) out.pos.push_back(std::move(v));
  if (a.dyn_kwargs) {
    Value kw = eval(*a.dyn_kwargs, frame);
    if (!kw.is_dict()) throw Error("argument after ** must be a mapping, not {}", type_name(kw));
    for (const auto& [k, v] : kw.dict().items) {
      if (!k.is_string()) throw Error("keywords must be strings");
      out.kw.emplace_back(k.str(), v);
    }
  }
  return out;
}

Value Interpreter::eval_call(const CallExpr& c, const FramePtr& frame) {
  // obj.method(...) on builtin types calls the method directly, without a bound-method object.
  if (c.callee->kind == ExprKind::Getattr) {
    const auto& g = static_cast<const GetattrExpr&>(*c.callee);
    Value obj = eval(*g.obj, frame);
    if (!obj.is_undefined() && !obj.is_object()) {
      MethodAccess access = method_access(obj, g.attr);
      if (access == MethodAccess::Safe) {
        CallArgs args = eval_args(c.args, frame);
        line_ = c.line;
        return call_method(*this, obj, g.attr, args);
      }
    }
    Value callee = getattr(obj, g.attr);
    CallArgs args = eval_args(c.args, frame);
    line_ = c.line;
    return call(callee, args);
  }
  Value callee = eval(*c.callee, frame);
  CallArgs args = eval_args(c.args, frame);
  line_ = c.line;
  return call(callee, args);
}

bool Interpreter::compare(CmpOp op, const Value& a, const Value& b) {
  switch (op) {
    case CmpOp::Eq: return py_equal(a, b);
    case CmpOp::Ne: return !py_equal(a, b);
    case CmpOp::Lt: return py_less(a, b);
    case CmpOp::Gt: return py_less(b, a);
    case CmpOp::Le: return py_less(a, b) || py_equal(a, b);
    case CmpOp::Ge: return py_less(b, a) || py_equal(a, b);
    case CmpOp::In: return contains(b, a);
    case CmpOp::NotIn: return !contains(b, a);
  }
  return false;
}

Value Interpreter::eval(const Expr& e, const FramePtr& frame) {
  Nest nest(*this);
  step();
  line_ = e.line;
  switch (e.kind) {
    case ExprKind::Const: return static_cast<const ConstExpr&>(e).value;
    case ExprKind::Name: {
      const auto& n = static_cast<const NameExpr&>(e);
      if (const Value* v = frame->lookup(n.name)) return *v;
      return Value::undefined("'" + n.name + "' is undefined");
    }
    case ExprKind::Getattr: {
      const auto& g = static_cast<const GetattrExpr&>(e);
      Value obj = eval(*g.obj, frame);
      line_ = e.line;
      return getattr(obj, g.attr);
    }
    case ExprKind::Getitem: return eval_getitem(static_cast<const GetitemExpr&>(e), frame);
    case ExprKind::Slice: throw Error("a slice is only valid inside []");
    case ExprKind::Call: return eval_call(static_cast<const CallExpr&>(e), frame);
    case ExprKind::Filter:
    case ExprKind::Test: {
      const auto& f = static_cast<const FilterExpr&>(e);
      Value input = f.node ? eval(*f.node, frame) : Value();
      CallArgs args = eval_args(f.args, frame);
      line_ = e.line;
      if (e.kind == ExprKind::Filter) return apply_filter(*this, f.name, input, args);
      return Value::boolean(apply_test(*this, f.name, input, args));
    }
    case ExprKind::Not: return Value::boolean(!truthy(eval(*static_cast<const UnaryExpr&>(e).operand, frame)));
    case ExprKind::Neg: return negate(eval(*static_cast<const UnaryExpr&>(e).operand, frame));
    case ExprKind::Pos: return unary_plus(eval(*static_cast<const UnaryExpr&>(e).operand, frame));
    case ExprKind::Binary: {
      const auto& b = static_cast<const BinaryExpr&>(e);
      Value left = eval(*b.left, frame);
      Value right = eval(*b.right, frame);
      line_ = e.line;
      return binary_op(b.op, left, right);
    }
    case ExprKind::And:
    case ExprKind::Or: {
      const auto& l = static_cast<const LogicExpr&>(e);
      Value left = eval(*l.left, frame);
      if (truthy(left) == (e.kind == ExprKind::Or)) return left;
      return eval(*l.right, frame);
    }
    case ExprKind::Concat: {
      std::string out;
      for (const auto& item : static_cast<const SeqExpr&>(e).items) {
        out += py_str(eval(*item, frame));
        check_string_size(out.size());
      }
      return Value::string(std::move(out));
    }
    case ExprKind::Compare: {
      const auto& c = static_cast<const CompareExpr&>(e);
      Value left = eval(*c.first, frame);
      for (const auto& [op, expr] : c.ops) {
        Value right = eval(*expr, frame);
        line_ = e.line;
        if (!compare(op, left, right)) return Value::boolean(false);
        left = std::move(right);
      }
      return Value::boolean(true);
    }
    case ExprKind::CondExpr: {
      const auto& c = static_cast<const CondExpr&>(e);
      if (truthy(eval(*c.test, frame))) return eval(*c.then_expr, frame);
      if (c.else_expr) return eval(*c.else_expr, frame);
      return Value::undefined("the inline if-expression on line " + std::to_string(e.line) +
                              " evaluated to false and no else section was defined.");
    }
    case ExprKind::List:
    case ExprKind::Tuple: {
      std::vector<Value> items;
      for (const auto& item : static_cast<const SeqExpr&>(e).items) items.push_back(eval(*item, frame));
      return e.kind == ExprKind::List ? Value::list(std::move(items)) : Value::tuple(std::move(items));
    }
    case ExprKind::Dict: {
      DictData d;
      for (const auto& [k, v] : static_cast<const DictExpr&>(e).items) {
        Value key = eval(*k, frame);
        d.set(std::move(key), eval(*v, frame));
      }
      return Value::dict(std::move(d));
    }
    case ExprKind::NSRef: throw Error("a namespace reference is only valid as an assignment target");
  }
  return Value();
}

}  // namespace gs::jinja
