// Executes a parsed template: scopes like jinja2 (a for-loop iteration, macro call, with-block
// or set-block body is a child scope; if-branches are not), Python value semantics, and limits
// that keep hostile templates from hanging or exhausting memory or stack.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chat/jinja/ast.h"
#include "chat/jinja/value.h"

namespace gs::jinja {

struct RenderLimits {
  int64_t max_steps = 50'000'000;           // statements + expression nodes evaluated
  size_t max_output_bytes = size_t{64} << 20;
  int max_nesting = 1000;                   // nested statements, expressions and calls
};

// Names the interpreter binds inside blocks, where they hide any variable of the same name: `loop`
// in for loops, `caller` in macros called from a call block, `varargs` and `kwargs` in macros.
inline constexpr const char* kLoopVar = "loop";
inline constexpr const char* kCallerVar = "caller";
inline constexpr const char* kVarargsVar = "varargs";
inline constexpr const char* kKwargsVar = "kwargs";
const std::vector<std::string>& block_variable_names();

// One scope: variables set in it, then its parent's.
class Frame {
 public:
  explicit Frame(std::shared_ptr<Frame> parent = nullptr) : parent_(std::move(parent)) {}
  const Value* lookup(const std::string& name) const;
  void set(const std::string& name, Value v);
  void clear() { vars_.clear(); }

 private:
  std::shared_ptr<Frame> parent_;
  std::vector<std::pair<std::string, Value>> vars_;
};
using FramePtr = std::shared_ptr<Frame>;

class Interpreter {
 public:
  explicit Interpreter(RenderLimits limits = {});
  ~Interpreter();
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

  // Renders `body` with `vars` as the template's variables (after the builtin globals).
  // Errors are gs::Error("template error (line N): ...").
  std::string render(const Body& body, const std::vector<std::pair<std::string, Value>>& vars);

  // ---- services for filters, tests, methods and objects ----
  Value call(const Value& callee, CallArgs& args);
  Value getattr(const Value& obj, const std::string& name);
  Value getitem(const Value& obj, const Value& key);
  // Objects that may take part in reference cycles are registered so the render can break them.
  template <typename T, typename... A>
  std::shared_ptr<T> make_object(A&&... args) {
    auto p = std::make_shared<T>(std::forward<A>(args)...);
    objects_.push_back(p);
    return p;
  }
  void keep_frame(const FramePtr& f) { frames_.push_back(f); }
  void step();
  // Nesting guard for recursion through statements, expressions and calls.
  struct Nest {
    Interpreter& in;
    explicit Nest(Interpreter& i);
    ~Nest() { --in.nesting_; }
  };

  Value call_macro(const MacroStmt& def, const FramePtr& closure, CallArgs& args);
  // Renders one level of a `recursive` for loop (the body of `loop(items)`).
  std::string render_recursive_loop(const ForStmt& stmt, const FramePtr& frame, const Value& items, int depth);

 private:
  enum class Flow { Normal, Break, Continue };
  Flow exec(const Body& body, const FramePtr& frame, std::string& out);
  Flow exec_stmt(const Stmt& s, const FramePtr& frame, std::string& out);
  void exec_for(const ForStmt& s, const FramePtr& frame, std::string& out, const Value& iterable, int depth);
  void assign(const Expr& target, const Value& v, const FramePtr& frame);
  Value apply_filter_chain(const Expr& chain, Value input, const FramePtr& frame);
  void append(std::string& out, const std::string& s);

  Value eval(const Expr& e, const FramePtr& frame);
  Value eval_call(const CallExpr& c, const FramePtr& frame);
  Value eval_getitem(const GetitemExpr& g, const FramePtr& frame);
  CallArgs eval_args(const CallArgsExpr& a, const FramePtr& frame);
  bool compare(CmpOp op, const Value& a, const Value& b);

  RenderLimits limits_;
  WorkBudget budget_;
  int nesting_ = 0;
  int line_ = 0;
  std::vector<std::shared_ptr<Object>> objects_;
  std::vector<FramePtr> frames_;
};

}  // namespace gs::jinja
