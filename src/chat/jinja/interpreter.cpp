#include "chat/jinja/interpreter.h"

#include "chat/jinja/objects.h"
#include "chat/jinja/operators.h"
#include "chat/jinja/py_format.h"
#include "chat/jinja/registry.h"
#include "core/error.h"

namespace gs::jinja {

const std::vector<std::string>& block_variable_names() {
  static const std::vector<std::string> names = {kLoopVar, kCallerVar, kVarargsVar, kKwargsVar};
  return names;
}

const Value* Frame::lookup(const std::string& name) const {
  for (const Frame* f = this; f; f = f->parent_.get())
    for (const auto& [n, v] : f->vars_)
      if (n == name) return &v;
  return nullptr;
}

void Frame::set(const std::string& name, Value v) {
  for (auto& [n, old] : vars_) {
    if (n == name) {
      old = std::move(v);
      return;
    }
  }
  vars_.emplace_back(name, std::move(v));
}

Interpreter::Interpreter(RenderLimits limits) : limits_(limits) { budget_.limit = limits.max_steps; }

Interpreter::~Interpreter() {
  // Macros hold their defining scope, which holds the macros; namespaces may hold themselves.
  for (auto& f : frames_) f->clear();
  for (auto& o : objects_) o->clear();
}

Interpreter::Nest::Nest(Interpreter& i) : in(i) {
  if (++in.nesting_ > in.limits_.max_nesting) {
    --in.nesting_;
    throw Error("maximum recursion depth exceeded ({} nested statements, expressions and calls)",
                in.limits_.max_nesting);
  }
}

void Interpreter::step() { charge_work(1); }

void Interpreter::append(std::string& out, const std::string& s) {
  if (out.size() + s.size() > limits_.max_output_bytes)
    throw Error("template output exceeds {} bytes", limits_.max_output_bytes);
  charge_work(static_cast<int64_t>(s.size() / 64));
  out += s;
}

std::string Interpreter::render(const Body& body, const std::vector<std::pair<std::string, Value>>& vars) {
  ScopedWorkBudget budget(&budget_);
  auto globals = std::make_shared<Frame>();
  for (auto& [name, v] : builtin_globals(*this)) globals->set(name, v);
  for (const auto& [name, v] : vars) globals->set(name, v);
  auto root = std::make_shared<Frame>(globals);
  keep_frame(root);
  std::string out;
  try {
    exec(body, root, out);
  } catch (const Error& e) {
    throw Error("template error (line {}): {}", line_, e.what());
  }
  return out;
}

Interpreter::Flow Interpreter::exec(const Body& body, const FramePtr& frame, std::string& out) {
  for (const auto& s : body) {
    Flow f = exec_stmt(*s, frame, out);
    if (f != Flow::Normal) return f;
  }
  return Flow::Normal;
}

Interpreter::Flow Interpreter::exec_stmt(const Stmt& s, const FramePtr& frame, std::string& out) {
  Nest nest(*this);
  step();
  line_ = s.line;
  switch (s.kind) {
    case StmtKind::Output: append(out, static_cast<const OutputStmt&>(s).text); break;
    case StmtKind::Print: append(out, py_str(eval(*static_cast<const PrintStmt&>(s).expr, frame))); break;
    case StmtKind::If: {
      const auto& n = static_cast<const IfStmt&>(s);
      for (const auto& [test, body] : n.branches)
        if (truthy(eval(*test, frame))) return exec(body, frame, out);
      return exec(n.else_body, frame, out);
    }
    case StmtKind::For: {
      const auto& n = static_cast<const ForStmt&>(s);
      exec_for(n, frame, out, eval(*n.iter, frame), 1);
      break;
    }
    case StmtKind::Set: {
      const auto& n = static_cast<const SetStmt&>(s);
      assign(*n.target, eval(*n.value, frame), frame);
      break;
    }
    case StmtKind::SetBlock: {
      const auto& n = static_cast<const SetBlockStmt&>(s);
      auto inner = std::make_shared<Frame>(frame);
      std::string buf;
      exec(n.body, inner, buf);
      Value v = Value::string(std::move(buf));
      if (n.filter) v = apply_filter_chain(*n.filter, v, frame);
      assign(*n.target, v, frame);
      break;
    }
    case StmtKind::Macro: {
      const auto& n = static_cast<const MacroStmt&>(s);
      keep_frame(frame);
      frame->set(n.name, Value::object(make_object<MacroObject>(&n, frame)));
      break;
    }
    case StmtKind::CallBlock: {
      const auto& n = static_cast<const CallBlockStmt&>(s);
      const auto& call = static_cast<const CallExpr&>(*n.call);
      keep_frame(frame);
      Value callee = eval(*call.callee, frame);
      CallArgs args = eval_args(call.args, frame);
      args.kw.emplace_back(kCallerVar, Value::object(make_object<MacroObject>(n.caller.get(), frame)));
      line_ = s.line;
      append(out, py_str(this->call(callee, args)));
      break;
    }
    case StmtKind::FilterBlock: {
      const auto& n = static_cast<const FilterBlockStmt&>(s);
      auto inner = std::make_shared<Frame>(frame);
      std::string buf;
      exec(n.body, inner, buf);
      append(out, py_str(apply_filter_chain(*n.filter, Value::string(std::move(buf)), frame)));
      break;
    }
    case StmtKind::With: {
      const auto& n = static_cast<const WithStmt&>(s);
      auto inner = std::make_shared<Frame>(frame);
      for (const auto& [target, value] : n.assignments) assign(*target, eval(*value, frame), inner);
      return exec(n.body, inner, out);
    }
    case StmtKind::Scope: {
      auto inner = std::make_shared<Frame>(frame);
      exec(static_cast<const ScopeStmt&>(s).body, inner, out);
      break;
    }
    case StmtKind::Break: return Flow::Break;
    case StmtKind::Continue: return Flow::Continue;
  }
  return Flow::Normal;
}

void Interpreter::exec_for(const ForStmt& s, const FramePtr& frame, std::string& out, const Value& iterable,
                           int depth) {
  std::vector<Value> all = py_iterate(iterable);
  auto loop = make_object<LoopObject>();
  loop->depth = depth;
  if (s.recursive) {
    loop->stmt = &s;
    loop->frame = frame;
  }
  if (s.filter) {
    for (auto& item : all) {
      step();
      auto scope = std::make_shared<Frame>(frame);
      assign(*s.target, item, scope);
      if (truthy(eval(*s.filter, scope))) loop->items.push_back(std::move(item));
    }
  } else {
    loop->items = std::move(all);
  }
  Value loop_value = Value::object(loop);
  for (size_t i = 0; i < loop->items.size(); ++i) {
    step();
    auto scope = std::make_shared<Frame>(frame);
    loop->index = i;
    assign(*s.target, loop->items[i], scope);
    scope->set(kLoopVar, loop_value);
    if (exec(s.body, scope, out) == Flow::Break) break;
  }
  if (loop->items.empty()) exec(s.else_body, std::make_shared<Frame>(frame), out);
}

std::string Interpreter::render_recursive_loop(const ForStmt& stmt, const FramePtr& frame, const Value& items,
                                               int depth) {
  Nest nest(*this);
  std::string out;
  exec_for(stmt, frame, out, items, depth);
  return out;
}

void Interpreter::assign(const Expr& target, const Value& v, const FramePtr& frame) {
  switch (target.kind) {
    case ExprKind::Name: frame->set(static_cast<const NameExpr&>(target).name, v); return;
    case ExprKind::NSRef: {
      const auto& ref = static_cast<const NSRefExpr&>(target);
      const Value* ns = frame->lookup(ref.name);
      auto* obj = ns && ns->is_object() ? dynamic_cast<NamespaceObject*>(&ns->obj()) : nullptr;
      if (!obj) throw Error("cannot assign attribute on non-namespace object");
      obj->attrs.set(Value::string(ref.attr), v);
      return;
    }
    case ExprKind::Tuple: {
      const auto& targets = static_cast<const SeqExpr&>(target).items;
      std::vector<Value> items = py_iterate(v);
      if (items.size() < targets.size())
        throw Error("not enough values to unpack (expected {}, got {})", targets.size(), items.size());
      if (items.size() > targets.size()) throw Error("too many values to unpack (expected {})", targets.size());
      for (size_t i = 0; i < targets.size(); ++i) assign(*targets[i], items[i], frame);
      return;
    }
    default: throw Error("can't assign to this expression");
  }
}

Value Interpreter::apply_filter_chain(const Expr& chain, Value input, const FramePtr& frame) {
  const auto& f = static_cast<const FilterExpr&>(chain);
  if (f.node) input = apply_filter_chain(*f.node, std::move(input), frame);
  CallArgs args = eval_args(f.args, frame);
  line_ = f.line;
  return apply_filter(*this, f.name, input, args);
}

Value Interpreter::call_macro(const MacroStmt& def, const FramePtr& closure, CallArgs& args) {
  Nest nest(*this);
  auto scope = std::make_shared<Frame>(closure);
  size_t n = def.params.size();
  std::vector<std::optional<Value>> bound(n);
  for (size_t i = 0; i < args.pos.size() && i < n; ++i) bound[i] = args.pos[i];
  std::vector<std::pair<std::string, Value>> extra_kw;
  Value caller = Value::undefined("No caller defined");
  for (auto& [name, v] : args.kw) {
    size_t i = 0;
    while (i < n && def.params[i].name != name) ++i;
    if (i < n && i >= args.pos.size()) {
      bound[i] = v;
    } else if (name == kCallerVar && def.uses_caller) {
      caller = v;
    } else {
      extra_kw.emplace_back(name, v);
    }
  }
  if (!def.uses_kwargs && !extra_kw.empty())
    throw Error("macro '{}' takes no keyword argument '{}'", def.name, extra_kw.front().first);
  if (!def.uses_varargs && args.pos.size() > n)
    throw Error("macro '{}' takes not more than {} argument(s)", def.name, n);
  for (size_t i = 0; i < n; ++i) {
    const MacroParam& p = def.params[i];
    Value v;
    if (bound[i]) v = *bound[i];
    else if (p.default_value) v = eval(*p.default_value, scope);
    else v = Value::undefined("parameter '" + p.name + "' was not provided");
    scope->set(p.name, v);
  }
  if (def.uses_caller) scope->set(kCallerVar, caller);
  if (def.uses_varargs) {
    std::vector<Value> rest;
    for (size_t i = n; i < args.pos.size(); ++i) rest.push_back(args.pos[i]);
    scope->set(kVarargsVar, Value::tuple(std::move(rest)));
  }
  if (def.uses_kwargs) {
    DictData kw;
    for (auto& [name, v] : extra_kw) kw.set(Value::string(name), v);
    scope->set(kKwargsVar, Value::dict(std::move(kw)));
  }
  std::string out;
  exec(def.body, scope, out);
  return Value::string(std::move(out));
}

}  // namespace gs::jinja
