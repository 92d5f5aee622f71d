// The syntax tree of a parsed template: expressions and statements, mirroring jinja2's nodes.
// Every node records its source line for error messages.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chat/jinja/value.h"

namespace gs::jinja {

struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

enum class ExprKind {
  Const, Name, Getattr, Getitem, Slice, Call, Filter, Test, Not, Neg, Pos, Binary, And, Or, Concat,
  Compare, CondExpr, List, Tuple, Dict, NSRef,
};

struct Expr {
  ExprKind kind;
  int line;
  Expr(ExprKind k, int l) : kind(k), line(l) {}
  virtual ~Expr() = default;
};

struct ConstExpr : Expr {
  Value value;
  ConstExpr(Value v, int l) : Expr(ExprKind::Const, l), value(std::move(v)) {}
};

struct NameExpr : Expr {
  std::string name;
  NameExpr(std::string n, int l) : Expr(ExprKind::Name, l), name(std::move(n)) {}
};

// `ns.attr` as the target of {% set %}.
struct NSRefExpr : Expr {
  std::string name, attr;
  NSRefExpr(std::string n, std::string a, int l) : Expr(ExprKind::NSRef, l), name(std::move(n)), attr(std::move(a)) {}
};

struct GetattrExpr : Expr {
  ExprPtr obj;
  std::string attr;
  GetattrExpr(ExprPtr o, std::string a, int l) : Expr(ExprKind::Getattr, l), obj(std::move(o)), attr(std::move(a)) {}
};

struct GetitemExpr : Expr {
  ExprPtr obj, arg;
  GetitemExpr(ExprPtr o, ExprPtr a, int l) : Expr(ExprKind::Getitem, l), obj(std::move(o)), arg(std::move(a)) {}
};

struct SliceExpr : Expr {
  ExprPtr start, stop, step;  // each may be null
  explicit SliceExpr(int l) : Expr(ExprKind::Slice, l) {}
};

struct CallArgsExpr {
  std::vector<ExprPtr> pos;
  std::vector<std::pair<std::string, ExprPtr>> kw;
  ExprPtr dyn_args, dyn_kwargs;  // *args, **kwargs (may be null)
};

struct CallExpr : Expr {
  ExprPtr callee;
  CallArgsExpr args;
  explicit CallExpr(int l) : Expr(ExprKind::Call, l) {}
};

// `node | name(args)` and `node is name(args)`. For filter blocks and `{% set x | f %}` node is null.
struct FilterExpr : Expr {
  ExprPtr node;
  std::string name;
  CallArgsExpr args;
  FilterExpr(ExprKind k, int l) : Expr(k, l) {}
};

struct UnaryExpr : Expr {
  ExprPtr operand;
  UnaryExpr(ExprKind k, ExprPtr o, int l) : Expr(k, l), operand(std::move(o)) {}
};

enum class BinOp { Add, Sub, Mul, Div, FloorDiv, Mod, Pow };

struct BinaryExpr : Expr {
  BinOp op;
  ExprPtr left, right;
  BinaryExpr(BinOp o, ExprPtr a, ExprPtr b, int l)
      : Expr(ExprKind::Binary, l), op(o), left(std::move(a)), right(std::move(b)) {}
};

// And / Or: Python semantics, the result is one of the operands.
struct LogicExpr : Expr {
  ExprPtr left, right;
  LogicExpr(ExprKind k, ExprPtr a, ExprPtr b, int l) : Expr(k, l), left(std::move(a)), right(std::move(b)) {}
};

enum class CmpOp { Eq, Ne, Lt, Le, Gt, Ge, In, NotIn };

struct CompareExpr : Expr {
  ExprPtr first;
  std::vector<std::pair<CmpOp, ExprPtr>> ops;  // chained like Python: a < b < c
  explicit CompareExpr(int l) : Expr(ExprKind::Compare, l) {}
};

struct CondExpr : Expr {
  ExprPtr test, then_expr, else_expr;  // else_expr may be null (-> undefined)
  explicit CondExpr(int l) : Expr(ExprKind::CondExpr, l) {}
};

// List, Tuple and Concat literals share this node.
struct SeqExpr : Expr {
  std::vector<ExprPtr> items;
  SeqExpr(ExprKind k, int l) : Expr(k, l) {}
};

struct DictExpr : Expr {
  std::vector<std::pair<ExprPtr, ExprPtr>> items;
  explicit DictExpr(int l) : Expr(ExprKind::Dict, l) {}
};

// ---- statements ----------------------------------------------------------------------------

enum class StmtKind { Output, Print, If, For, Set, SetBlock, Macro, CallBlock, FilterBlock, With, Break, Continue,
                      Scope };

struct Stmt {
  StmtKind kind;
  int line;
  Stmt(StmtKind k, int l) : kind(k), line(l) {}
  virtual ~Stmt() = default;
};

struct OutputStmt : Stmt {
  std::string text;
  OutputStmt(std::string t, int l) : Stmt(StmtKind::Output, l), text(std::move(t)) {}
};

struct PrintStmt : Stmt {
  ExprPtr expr;
  PrintStmt(ExprPtr e, int l) : Stmt(StmtKind::Print, l), expr(std::move(e)) {}
};

struct IfStmt : Stmt {
  std::vector<std::pair<ExprPtr, Body>> branches;  // if, elif...
  Body else_body;
  explicit IfStmt(int l) : Stmt(StmtKind::If, l) {}
};

struct ForStmt : Stmt {
  ExprPtr target, iter, filter;  // filter: `for x in y if cond` (may be null)
  bool recursive = false;
  Body body, else_body;
  explicit ForStmt(int l) : Stmt(StmtKind::For, l) {}
};

struct SetStmt : Stmt {
  ExprPtr target, value;
  explicit SetStmt(int l) : Stmt(StmtKind::Set, l) {}
};

// {% set x | filters %}...{% endset %}; `filter` is a FilterExpr chain whose innermost node is null.
struct SetBlockStmt : Stmt {
  ExprPtr target, filter;
  Body body;
  explicit SetBlockStmt(int l) : Stmt(StmtKind::SetBlock, l) {}
};

struct MacroParam {
  std::string name;
  ExprPtr default_value;  // may be null
};

// Macros and the bodies of {% call %} blocks (the `caller`).
struct MacroStmt : Stmt {
  std::string name;
  std::vector<MacroParam> params;
  Body body;
  bool uses_varargs = false, uses_kwargs = false, uses_caller = false;
  explicit MacroStmt(int l) : Stmt(StmtKind::Macro, l) {}
};

struct CallBlockStmt : Stmt {
  ExprPtr call;                    // a CallExpr
  std::unique_ptr<MacroStmt> caller;  // the block body as a macro named "caller"
  explicit CallBlockStmt(int l) : Stmt(StmtKind::CallBlock, l) {}
};

struct FilterBlockStmt : Stmt {
  ExprPtr filter;  // FilterExpr chain whose innermost node is null
  Body body;
  explicit FilterBlockStmt(int l) : Stmt(StmtKind::FilterBlock, l) {}
};

struct WithStmt : Stmt {
  std::vector<std::pair<ExprPtr, ExprPtr>> assignments;  // target = value
  Body body;
  explicit WithStmt(int l) : Stmt(StmtKind::With, l) {}
};

// A body rendered in its own scope ({% generation %} of transformers' AssistantTracker).
struct ScopeStmt : Stmt {
  Body body;
  explicit ScopeStmt(int l) : Stmt(StmtKind::Scope, l) {}
};

struct LoopControlStmt : Stmt {
  LoopControlStmt(StmtKind k, int l) : Stmt(k, l) {}
};

}  // namespace gs::jinja
