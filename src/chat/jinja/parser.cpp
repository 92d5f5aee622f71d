#include "chat/jinja/parser.h"

#include <algorithm>

#include "chat/jinja/interpreter.h"
#include "chat/jinja/lexer.h"
#include "chat/jinja/registry.h"
#include "core/error.h"

namespace gs::jinja {

namespace {

// Nesting deeper than this (expressions or blocks) is refused instead of exhausting the stack.
constexpr int kMaxNesting = 200;

using Names = std::vector<std::string_view>;

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : t_(std::move(tokens)) {}

  Body parse() {
    Body body = subparse(nullptr);
    if (cur().type != TokenType::Eof) fail("unexpected " + describe(cur()));
    return body;
  }

 private:
  std::vector<Token> t_;
  size_t i_ = 0;
  int depth_ = 0;
  bool soft_ = false;     // inside an if-branch / conditional expression (see header)
  int loop_depth_ = 0;    // for break/continue
  std::vector<MacroStmt*> macros_;  // macros being parsed, innermost last

  struct DepthGuard {
    Parser& p;
    explicit DepthGuard(Parser& parser) : p(parser) {
      if (++p.depth_ > kMaxNesting) p.fail("template nested too deeply");
    }
    ~DepthGuard() { --p.depth_; }
  };

  const Token& cur() const { return t_[i_]; }
  const Token& look() const { return t_[std::min(i_ + 1, t_.size() - 1)]; }
  void next() {
    if (i_ + 1 < t_.size()) ++i_;
  }
  [[noreturn]] void fail(const std::string& msg, int line = 0) const {
    throw Error("template syntax error (line {}): {}", line ? line : cur().line, msg);
  }
  bool is_op(std::string_view op) const { return cur().type == TokenType::Operator && cur().value == op; }
  bool is_name(std::string_view n) const { return cur().type == TokenType::Name && cur().value == n; }
  bool skip_op(std::string_view op) {
    if (!is_op(op)) return false;
    next();
    return true;
  }
  bool skip_name(std::string_view n) {
    if (!is_name(n)) return false;
    next();
    return true;
  }
  void expect_op(std::string_view op) {
    if (!skip_op(op)) fail("expected token '" + std::string(op) + "', got '" + describe(cur()) + "'");
  }
  void expect(TokenType type, const char* what) {
    if (cur().type != type) fail(std::string("expected token '") + what + "', got '" + describe(cur()) + "'");
    next();
  }
  std::string expect_name() {
    if (cur().type != TokenType::Name) fail("expected token 'name', got '" + describe(cur()) + "'");
    std::string n = cur().value;
    next();
    return n;
  }
  bool at_any_name(const Names* names) const {
    if (!names || cur().type != TokenType::Name) return false;
    return std::find(names->begin(), names->end(), cur().value) != names->end();
  }

  // ---- statements --------------------------------------------------------------------------

  Body subparse(const Names* end_tokens) {
    Body body;
    while (cur().type != TokenType::Eof) {
      const Token& tok = cur();
      if (tok.type == TokenType::Data) {
        body.push_back(std::make_unique<OutputStmt>(tok.value, tok.line));
        next();
      } else if (tok.type == TokenType::VariableBegin) {
        int line = tok.line;
        next();
        ExprPtr e = parse_tuple(false, true, nullptr, false);
        expect(TokenType::VariableEnd, "end of print statement");
        body.push_back(std::make_unique<PrintStmt>(std::move(e), line));
      } else if (tok.type == TokenType::BlockBegin) {
        next();
        if (at_any_name(end_tokens)) return body;
        body.push_back(parse_statement());
        expect(TokenType::BlockEnd, "end of statement block");
      } else {
        fail("unexpected " + describe(tok));
      }
    }
    return body;
  }

  Body parse_statements(const Names& end_tokens, bool drop_needle) {
    skip_op(":");
    expect(TokenType::BlockEnd, "end of statement block");
    Body body = subparse(&end_tokens);
    if (cur().type == TokenType::Eof) {
      std::string want;
      for (auto n : end_tokens) want += (want.empty() ? "'" : ", '") + std::string(n) + "'";
      fail("Unexpected end of template. Jinja was looking for the following tags: " + want + ".");
    }
    if (drop_needle) next();
    return body;
  }

  StmtPtr parse_statement() {
    DepthGuard guard(*this);
    if (cur().type != TokenType::Name) fail("tag name expected");
    const std::string tag = cur().value;
    int line = cur().line;
    if (tag == "if") return parse_if();
    if (tag == "for") return parse_for();
    if (tag == "set") return parse_set();
    if (tag == "macro") return parse_macro();
    if (tag == "call") return parse_call_block();
    if (tag == "filter") return parse_filter_block();
    if (tag == "with") return parse_with();
    if (tag == "print") {
      next();
      auto concat = std::make_unique<SeqExpr>(ExprKind::Concat, line);
      while (cur().type != TokenType::BlockEnd) {
        if (!concat->items.empty()) expect_op(",");
        concat->items.push_back(parse_expression(true));
      }
      return std::make_unique<PrintStmt>(std::move(concat), line);
    }
    if (tag == "break" || tag == "continue") {
      if (loop_depth_ == 0) fail("'" + tag + "' outside loop");
      next();
      return std::make_unique<LoopControlStmt>(tag == "break" ? StmtKind::Break : StmtKind::Continue, line);
    }
    if (tag == "generation") {
      next();
      auto s = std::make_unique<ScopeStmt>(line);
      s->body = parse_statements({"endgeneration"}, true);
      return s;
    }
    if (tag == "block" || tag == "extends" || tag == "include" || tag == "import" || tag == "from" ||
        tag == "autoescape")
      fail("tag '" + tag + "' needs a template loader or autoescaping, which chat templates do not have");
    fail("Encountered unknown tag '" + tag + "'.");
  }

  StmtPtr parse_if() {
    auto node = std::make_unique<IfStmt>(cur().line);
    next();
    bool saved = soft_;
    soft_ = true;
    while (true) {
      ExprPtr test = parse_tuple(false, false, nullptr, false);
      Body body = parse_statements({"elif", "else", "endif"}, false);
      node->branches.emplace_back(std::move(test), std::move(body));
      std::string tok = cur().value;
      next();
      if (tok == "elif") continue;
      if (tok == "else") node->else_body = parse_statements({"endif"}, true);
      break;
    }
    soft_ = saved;
    return node;
  }

  StmtPtr parse_for() {
    auto node = std::make_unique<ForStmt>(cur().line);
    next();
    bool saved = soft_;
    soft_ = false;
    static const Names in_rule = {"in"};
    node->target = parse_assign_target(true, false, &in_rule, false);
    if (!skip_name("in")) fail("expected token 'in', got '" + describe(cur()) + "'");
    static const Names recursive_rule = {"recursive"};
    node->iter = parse_tuple(false, false, &recursive_rule, false);
    if (skip_name("if")) node->filter = parse_expression(true);
    node->recursive = skip_name("recursive");
    ++loop_depth_;
    node->body = parse_statements({"endfor", "else"}, false);
    --loop_depth_;
    std::string tok = cur().value;
    next();
    if (tok == "else") node->else_body = parse_statements({"endfor"}, true);
    soft_ = saved;
    return node;
  }

  StmtPtr parse_set() {
    int line = cur().line;
    next();
    ExprPtr target = parse_assign_target(true, false, nullptr, true);
    if (skip_op("=")) {
      auto node = std::make_unique<SetStmt>(line);
      node->target = std::move(target);
      node->value = parse_tuple(false, true, nullptr, false);
      return node;
    }
    auto node = std::make_unique<SetBlockStmt>(line);
    node->target = std::move(target);
    node->filter = parse_filter(nullptr, false);
    node->body = parse_statements({"endset"}, true);
    return node;
  }

  void parse_signature(MacroStmt& m) {
    expect_op("(");
    bool seen_default = false;
    while (!is_op(")")) {
      if (!m.params.empty()) expect_op(",");
      MacroParam p;
      p.name = expect_name();
      if (skip_op("=")) {
        p.default_value = parse_expression(true);
        seen_default = true;
      } else if (seen_default) {
        fail("non-default argument follows default argument");
      }
      m.params.push_back(std::move(p));
    }
    expect_op(")");
  }

  // Bodies of macros and call blocks are functions: their own scope, no enclosing loop.
  Body parse_function_body(MacroStmt& m, const Names& end) {
    bool saved_soft = soft_;
    int saved_loops = loop_depth_;
    soft_ = false;
    loop_depth_ = 0;
    macros_.push_back(&m);
    Body body = parse_statements(end, true);
    macros_.pop_back();
    soft_ = saved_soft;
    loop_depth_ = saved_loops;
    return body;
  }

  StmtPtr parse_macro() {
    auto node = std::make_unique<MacroStmt>(cur().line);
    next();
    node->name = expect_name();
    parse_signature(*node);
    node->body = parse_function_body(*node, {"endmacro"});
    return node;
  }

  StmtPtr parse_call_block() {
    auto node = std::make_unique<CallBlockStmt>(cur().line);
    next();
    node->caller = std::make_unique<MacroStmt>(node->line);
    node->caller->name = kCallerVar;
    if (is_op("(")) parse_signature(*node->caller);
    node->call = parse_expression(true);
    if (node->call->kind != ExprKind::Call) fail("expected call", node->line);
    node->caller->body = parse_function_body(*node->caller, {"endcall"});
    return node;
  }

  StmtPtr parse_filter_block() {
    auto node = std::make_unique<FilterBlockStmt>(cur().line);
    next();
    bool saved = soft_;
    soft_ = false;
    node->filter = parse_filter(nullptr, true);
    node->body = parse_statements({"endfilter"}, true);
    soft_ = saved;
    return node;
  }

  StmtPtr parse_with() {
    auto node = std::make_unique<WithStmt>(cur().line);
    next();
    bool saved = soft_;
    soft_ = false;
    while (cur().type != TokenType::BlockEnd) {
      if (!node->assignments.empty()) expect_op(",");
      ExprPtr target = parse_assign_target(true, false, nullptr, false);
      expect_op("=");
      node->assignments.emplace_back(std::move(target), parse_expression(true));
    }
    node->body = parse_statements({"endwith"}, true);
    soft_ = saved;
    return node;
  }

  static bool can_assign(const Expr& e) {
    if (e.kind == ExprKind::Name || e.kind == ExprKind::NSRef) return true;
    if (e.kind != ExprKind::Tuple) return false;
    for (const auto& item : static_cast<const SeqExpr&>(e).items)
      if (!can_assign(*item)) return false;
    return true;
  }

  ExprPtr parse_assign_target(bool with_tuple, bool name_only, const Names* extra_end, bool with_namespace) {
    ExprPtr target;
    int line = cur().line;
    if (with_namespace && cur().type == TokenType::Name && look().type == TokenType::Operator &&
        look().value == ".") {
      std::string name = expect_name();
      next();
      target = std::make_unique<NSRefExpr>(name, expect_name(), line);
    } else if (name_only) {
      target = std::make_unique<NameExpr>(expect_name(), line);
    } else {
      target = with_tuple ? parse_tuple(true, true, extra_end, false) : parse_primary();
    }
    if (!can_assign(*target)) fail("can't assign to this expression", line);
    return target;
  }

  // ---- expressions -------------------------------------------------------------------------

  bool is_tuple_end(const Names* extra_end) const {
    TokenType t = cur().type;
    if (t == TokenType::VariableEnd || t == TokenType::BlockEnd || is_op(")")) return true;
    return at_any_name(extra_end);
  }

  ExprPtr parse_tuple(bool simplified, bool with_condexpr, const Names* extra_end, bool explicit_parens) {
    int line = cur().line;
    std::vector<ExprPtr> args;
    bool is_tuple = false;
    while (true) {
      if (!args.empty()) expect_op(",");
      if (is_tuple_end(extra_end)) break;
      args.push_back(simplified ? parse_primary() : parse_expression(with_condexpr));
      if (is_op(",")) {
        is_tuple = true;
      } else {
        break;
      }
      line = cur().line;
    }
    if (!is_tuple) {
      if (!args.empty()) return std::move(args[0]);
      if (!explicit_parens) fail("Expected an expression, got '" + describe(cur()) + "'");
    }
    auto t = std::make_unique<SeqExpr>(ExprKind::Tuple, line);
    t->items = std::move(args);
    return t;
  }

  ExprPtr parse_expression(bool with_condexpr) {
    DepthGuard guard(*this);
    return with_condexpr ? parse_condexpr() : parse_or();
  }

  ExprPtr parse_condexpr() {
    int line = cur().line;
    ExprPtr expr1 = parse_or();
    while (skip_name("if")) {
      bool saved = soft_;
      soft_ = true;
      auto c = std::make_unique<CondExpr>(line);
      c->test = parse_or();
      c->then_expr = std::move(expr1);
      if (skip_name("else")) c->else_expr = parse_condexpr();
      soft_ = saved;
      expr1 = std::move(c);
      line = cur().line;
    }
    return expr1;
  }

  ExprPtr parse_or() {
    int line = cur().line;
    ExprPtr left = parse_and();
    while (skip_name("or")) left = std::make_unique<LogicExpr>(ExprKind::Or, std::move(left), parse_and(), line);
    return left;
  }

  ExprPtr parse_and() {
    int line = cur().line;
    ExprPtr left = parse_not();
    while (skip_name("and")) left = std::make_unique<LogicExpr>(ExprKind::And, std::move(left), parse_not(), line);
    return left;
  }

  ExprPtr parse_not() {
    DepthGuard guard(*this);
    int line = cur().line;
    if (skip_name("not")) return std::make_unique<UnaryExpr>(ExprKind::Not, parse_not(), line);
    return parse_compare();
  }

  ExprPtr parse_compare() {
    int line = cur().line;
    ExprPtr expr = parse_math1();
    std::vector<std::pair<CmpOp, ExprPtr>> ops;
    while (true) {
      static const std::pair<const char*, CmpOp> table[] = {{"==", CmpOp::Eq}, {"!=", CmpOp::Ne}, {"<", CmpOp::Lt},
                                                            {"<=", CmpOp::Le}, {">", CmpOp::Gt},  {">=", CmpOp::Ge}};
      bool matched = false;
      for (const auto& [text, op] : table) {
        if (is_op(text)) {
          next();
          ops.emplace_back(op, parse_math1());
          matched = true;
          break;
        }
      }
      if (matched) continue;
      if (skip_name("in")) {
        ops.emplace_back(CmpOp::In, parse_math1());
      } else if (is_name("not") && look().type == TokenType::Name && look().value == "in") {
        next();
        next();
        ops.emplace_back(CmpOp::NotIn, parse_math1());
      } else {
        break;
      }
    }
    if (ops.empty()) return expr;
    auto c = std::make_unique<CompareExpr>(line);
    c->first = std::move(expr);
    c->ops = std::move(ops);
    return c;
  }

  ExprPtr parse_math1() {
    ExprPtr left = parse_concat();
    while (is_op("+") || is_op("-")) {
      BinOp op = is_op("+") ? BinOp::Add : BinOp::Sub;
      int line = cur().line;
      next();
      left = std::make_unique<BinaryExpr>(op, std::move(left), parse_concat(), line);
    }
    return left;
  }

  ExprPtr parse_concat() {
    int line = cur().line;
    ExprPtr first = parse_math2();
    if (!is_op("~")) return first;
    auto c = std::make_unique<SeqExpr>(ExprKind::Concat, line);
    c->items.push_back(std::move(first));
    while (skip_op("~")) c->items.push_back(parse_math2());
    return c;
  }

  ExprPtr parse_math2() {
    ExprPtr left = parse_pow();
    while (true) {
      BinOp op;
      if (is_op("*")) op = BinOp::Mul;
      else if (is_op("/")) op = BinOp::Div;
      else if (is_op("//")) op = BinOp::FloorDiv;
      else if (is_op("%")) op = BinOp::Mod;
      else break;
      int line = cur().line;
      next();
      left = std::make_unique<BinaryExpr>(op, std::move(left), parse_pow(), line);
    }
    return left;
  }

  ExprPtr parse_pow() {
    ExprPtr left = parse_unary(true);
    while (is_op("**")) {
      int line = cur().line;
      next();
      left = std::make_unique<BinaryExpr>(BinOp::Pow, std::move(left), parse_unary(true), line);
    }
    return left;
  }

  ExprPtr parse_unary(bool with_filter) {
    DepthGuard guard(*this);
    int line = cur().line;
    ExprPtr node;
    if (skip_op("-")) {
      node = std::make_unique<UnaryExpr>(ExprKind::Neg, parse_unary(false), line);
    } else if (skip_op("+")) {
      node = std::make_unique<UnaryExpr>(ExprKind::Pos, parse_unary(false), line);
    } else {
      node = parse_primary();
    }
    node = parse_postfix(std::move(node));
    if (with_filter) node = parse_filter_expr(std::move(node));
    return node;
  }

  void note_name_use(const std::string& name) {
    for (MacroStmt* m : macros_) {
      if (name == kVarargsVar) m->uses_varargs = true;
      if (name == kKwargsVar) m->uses_kwargs = true;
      if (name == kCallerVar) m->uses_caller = true;
    }
  }

  ExprPtr parse_primary() {
    DepthGuard guard(*this);
    const Token& tok = cur();
    int line = tok.line;
    switch (tok.type) {
      case TokenType::Name: {
        ExprPtr node;
        if (tok.value == "true" || tok.value == "True") node = std::make_unique<ConstExpr>(Value::boolean(true), line);
        else if (tok.value == "false" || tok.value == "False") node = std::make_unique<ConstExpr>(Value::boolean(false), line);
        else if (tok.value == "none" || tok.value == "None") node = std::make_unique<ConstExpr>(Value::none(), line);
        else {
          note_name_use(tok.value);
          node = std::make_unique<NameExpr>(tok.value, line);
        }
        next();
        return node;
      }
      case TokenType::String: {
        std::string s;
        while (cur().type == TokenType::String) {
          s += cur().value;
          next();
        }
        return std::make_unique<ConstExpr>(Value::string(std::move(s)), line);
      }
      case TokenType::Integer: {
        auto node = std::make_unique<ConstExpr>(Value::integer(tok.int_value), line);
        next();
        return node;
      }
      case TokenType::Float: {
        auto node = std::make_unique<ConstExpr>(Value::number(tok.float_value), line);
        next();
        return node;
      }
      default: break;
    }
    if (skip_op("(")) {
      ExprPtr node = parse_tuple(false, true, nullptr, true);
      expect_op(")");
      return node;
    }
    if (skip_op("[")) {
      auto node = std::make_unique<SeqExpr>(ExprKind::List, line);
      while (!is_op("]")) {
        if (!node->items.empty()) expect_op(",");
        if (is_op("]")) break;
        node->items.push_back(parse_expression(true));
      }
      expect_op("]");
      return node;
    }
    if (skip_op("{")) {
      auto node = std::make_unique<DictExpr>(line);
      while (!is_op("}")) {
        if (!node->items.empty()) expect_op(",");
        if (is_op("}")) break;
        ExprPtr key = parse_expression(true);
        expect_op(":");
        node->items.emplace_back(std::move(key), parse_expression(true));
      }
      expect_op("}");
      return node;
    }
    fail("unexpected '" + describe(tok) + "'");
  }

  ExprPtr parse_postfix(ExprPtr node) {
    while (true) {
      if (is_op(".") || is_op("[")) {
        node = parse_subscript(std::move(node));
      } else if (is_op("(")) {
        node = parse_call(std::move(node));
      } else {
        return node;
      }
    }
  }

  ExprPtr parse_filter_expr(ExprPtr node) {
    while (true) {
      if (is_op("|")) {
        node = parse_filter(std::move(node), false);
      } else if (is_name("is")) {
        node = parse_test(std::move(node));
      } else if (is_op("(")) {
        node = parse_call(std::move(node));
      } else {
        return node;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr node) {
    DepthGuard guard(*this);
    int line = cur().line;
    if (skip_op(".")) {
      const Token& attr = cur();
      if (attr.type == TokenType::Name) {
        std::string name = attr.value;
        next();
        return std::make_unique<GetattrExpr>(std::move(node), name, line);
      }
      if (attr.type != TokenType::Integer) fail("expected name or number", attr.line);
      auto arg = std::make_unique<ConstExpr>(Value::integer(attr.int_value), attr.line);
      next();
      return std::make_unique<GetitemExpr>(std::move(node), std::move(arg), line);
    }
    expect_op("[");
    std::vector<ExprPtr> args;
    while (!is_op("]")) {
      if (!args.empty()) expect_op(",");
      args.push_back(parse_subscribed());
    }
    expect_op("]");
    ExprPtr arg;
    if (args.size() == 1) {
      arg = std::move(args[0]);
    } else {
      auto t = std::make_unique<SeqExpr>(ExprKind::Tuple, line);
      t->items = std::move(args);
      arg = std::move(t);
    }
    return std::make_unique<GetitemExpr>(std::move(node), std::move(arg), line);
  }

  ExprPtr parse_subscribed() {
    int line = cur().line;
    auto slice = std::make_unique<SliceExpr>(line);
    if (!skip_op(":")) {
      ExprPtr node = parse_expression(true);
      if (!is_op(":")) return node;
      next();
      slice->start = std::move(node);
    }
    if (!is_op(":") && !is_op("]") && !is_op(",")) slice->stop = parse_expression(true);
    if (skip_op(":")) {
      if (!is_op("]") && !is_op(",")) slice->step = parse_expression(true);
    }
    return slice;
  }

  CallArgsExpr parse_call_args() {
    int line = cur().line;
    expect_op("(");
    CallArgsExpr a;
    bool require_comma = false;
    auto ensure = [&](bool ok) {
      if (!ok) fail("invalid syntax for function call expression", line);
    };
    while (!is_op(")")) {
      if (require_comma) {
        expect_op(",");
        if (is_op(")")) break;
      }
      if (skip_op("*")) {
        ensure(!a.dyn_args && !a.dyn_kwargs);
        a.dyn_args = parse_expression(true);
      } else if (skip_op("**")) {
        ensure(!a.dyn_kwargs);
        a.dyn_kwargs = parse_expression(true);
      } else if (cur().type == TokenType::Name && look().type == TokenType::Operator && look().value == "=") {
        ensure(!a.dyn_kwargs);
        std::string key = cur().value;
        next();
        next();
        a.kw.emplace_back(key, parse_expression(true));
      } else {
        ensure(!a.dyn_args && !a.dyn_kwargs && a.kw.empty());
        a.pos.push_back(parse_expression(true));
      }
      require_comma = true;
    }
    expect_op(")");
    return a;
  }

  ExprPtr parse_call(ExprPtr node) {
    auto call = std::make_unique<CallExpr>(cur().line);
    call->callee = std::move(node);
    call->args = parse_call_args();
    return call;
  }

  std::string parse_dotted_name() {
    std::string name = expect_name();
    while (skip_op(".")) name += "." + expect_name();
    return name;
  }

  ExprPtr parse_filter(ExprPtr node, bool start_inline) {
    while (is_op("|") || start_inline) {
      if (!start_inline) next();
      start_inline = false;
      int line = cur().line;
      auto f = std::make_unique<FilterExpr>(ExprKind::Filter, line);
      f->name = parse_dotted_name();
      if (!soft_ && !is_known_filter(f->name)) fail("No filter named '" + f->name + "'.", line);
      if (is_op("(")) f->args = parse_call_args();
      f->node = std::move(node);
      node = std::move(f);
    }
    return node;
  }

  ExprPtr parse_test(ExprPtr node) {
    int line = cur().line;
    next();  // 'is'
    bool negated = skip_name("not");
    auto t = std::make_unique<FilterExpr>(ExprKind::Test, line);
    t->name = parse_dotted_name();
    if (!soft_ && !is_known_test(t->name)) fail("No test named '" + t->name + "'.", line);
    TokenType type = cur().type;
    if (is_op("(")) {
      t->args = parse_call_args();
    } else if ((type == TokenType::Name || type == TokenType::String || type == TokenType::Integer ||
                type == TokenType::Float || is_op("[") || is_op("{")) &&
               !is_name("else") && !is_name("or") && !is_name("and")) {
      if (is_name("is")) fail("You cannot chain multiple tests with is");
      t->args.pos.push_back(parse_postfix(parse_primary()));
    }
    t->node = std::move(node);
    if (negated) return std::make_unique<UnaryExpr>(ExprKind::Not, std::move(t), line);
    return t;
  }
};

}  // namespace

Body parse_template(std::string_view source) { return Parser(tokenize(source)).parse(); }

}  // namespace gs::jinja
