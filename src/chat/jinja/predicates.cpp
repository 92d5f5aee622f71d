// jinja2's tests (`x is defined`, `x is mapping`, `x is divisibleby 3`, ...).
#include "chat/jinja/filter_table.h"
#include "chat/jinja/objects.h"
#include "chat/jinja/operators.h"
#include "chat/jinja/py_format.h"
#include "chat/jinja/registry.h"
#include "chat/jinja/utf8.h"
#include "core/error.h"

namespace gs::jinja {

namespace {

const Value& other_arg(const char* name, CallArgs& args) {
  GS_CHECK(args.pos.size() + args.kw.size() == 1, "test '{}' takes exactly one argument", name);
  return args.pos.empty() ? args.kw[0].second : args.pos[0];
}

void no_args(const char* name, CallArgs& args) {
  GS_CHECK(args.pos.empty() && args.kw.empty(), "test '{}' takes no arguments", name);
}

#define GS_SIMPLE_TEST(fn, name, expr)                        \
  bool fn(Interpreter&, const Value& v, CallArgs& args) {     \
    no_args(name, args);                                      \
    return (expr);                                            \
  }

GS_SIMPLE_TEST(t_defined, "defined", !v.is_undefined())
GS_SIMPLE_TEST(t_undefined, "undefined", v.is_undefined())
GS_SIMPLE_TEST(t_none, "none", v.is_none())
GS_SIMPLE_TEST(t_boolean, "boolean", v.is_bool())
GS_SIMPLE_TEST(t_true, "true", v.is_bool() && v.as_bool())
GS_SIMPLE_TEST(t_false, "false", v.is_bool() && !v.as_bool())
GS_SIMPLE_TEST(t_integer, "integer", v.is_int())
GS_SIMPLE_TEST(t_float, "float", v.is_float())
GS_SIMPLE_TEST(t_number, "number", v.is_number())
GS_SIMPLE_TEST(t_string, "string", v.is_string())
GS_SIMPLE_TEST(t_mapping, "mapping", v.is_dict())
GS_SIMPLE_TEST(t_callable, "callable", v.is_object() && v.obj().callable())
GS_SIMPLE_TEST(t_escaped, "escaped", false)
// Python: has __len__ and __getitem__ (jinja2's Undefined has both).
GS_SIMPLE_TEST(t_sequence, "sequence", v.is_undefined() || v.is_string() || v.is_list() || v.is_dict())
GS_SIMPLE_TEST(t_iterable, "iterable",
               v.is_undefined() || v.is_string() || v.is_list() || v.is_dict() || v.is_iterator() ||
                   (v.is_object() && v.obj().type_name() == "LoopContext"))

bool t_lower(Interpreter& in, const Value& v, CallArgs& args) {
  no_args("lower", args);
  CallArgs none;
  return truthy(call_str_method(in, py_str(v), "islower", none));
}

bool t_upper(Interpreter& in, const Value& v, CallArgs& args) {
  no_args("upper", args);
  CallArgs none;
  return truthy(call_str_method(in, py_str(v), "isupper", none));
}

bool t_odd(Interpreter&, const Value& v, CallArgs& args) {
  no_args("odd", args);
  return py_equal(binary_op(BinOp::Mod, v, Value::integer(2)), Value::integer(1));
}

bool t_even(Interpreter&, const Value& v, CallArgs& args) {
  no_args("even", args);
  return py_equal(binary_op(BinOp::Mod, v, Value::integer(2)), Value::integer(0));
}

bool t_divisibleby(Interpreter&, const Value& v, CallArgs& args) {
  return py_equal(binary_op(BinOp::Mod, v, other_arg("divisibleby", args)), Value::integer(0));
}

bool t_eq(Interpreter&, const Value& v, CallArgs& args) { return py_equal(v, other_arg("eq", args)); }
bool t_ne(Interpreter&, const Value& v, CallArgs& args) { return !py_equal(v, other_arg("ne", args)); }
bool t_lt(Interpreter&, const Value& v, CallArgs& args) { return py_less(v, other_arg("lt", args)); }
bool t_gt(Interpreter&, const Value& v, CallArgs& args) { return py_less(other_arg("gt", args), v); }
bool t_le(Interpreter&, const Value& v, CallArgs& args) {
  const Value& o = other_arg("le", args);
  return py_less(v, o) || py_equal(v, o);
}
bool t_ge(Interpreter&, const Value& v, CallArgs& args) {
  const Value& o = other_arg("ge", args);
  return py_less(o, v) || py_equal(v, o);
}
bool t_in(Interpreter&, const Value& v, CallArgs& args) { return contains(other_arg("in", args), v); }

// `is` identity: singletons and small values compare by value, containers by identity.
bool t_sameas(Interpreter&, const Value& v, CallArgs& args) {
  const Value& o = other_arg("sameas", args);
  if (v.kind() != o.kind()) return false;
  switch (v.kind()) {
    case Value::Kind::None: return true;
    case Value::Kind::Bool: return v.as_bool() == o.as_bool();
    case Value::Kind::Int: return v.as_int() == o.as_int() && v.as_int() >= -5 && v.as_int() <= 256;
    case Value::Kind::Undefined:
    case Value::Kind::Float: return false;
    default: return v.identity() == o.identity();
  }
}

bool t_filter(Interpreter&, const Value& v, CallArgs& args) {
  no_args("filter", args);
  return v.is_string() && is_known_filter(v.str());
}

bool t_test(Interpreter&, const Value& v, CallArgs& args) {
  no_args("test", args);
  return v.is_string() && is_known_test(v.str());
}

}  // namespace

void add_tests(TestTable& t) {
  t["defined"] = t_defined;
  t["undefined"] = t_undefined;
  t["none"] = t_none;
  t["boolean"] = t_boolean;
  t["true"] = t_true;
  t["false"] = t_false;
  t["integer"] = t_integer;
  t["float"] = t_float;
  t["number"] = t_number;
  t["string"] = t_string;
  t["mapping"] = t_mapping;
  t["callable"] = t_callable;
  t["escaped"] = t_escaped;
  t["sequence"] = t_sequence;
  t["iterable"] = t_iterable;
  t["lower"] = t_lower;
  t["upper"] = t_upper;
  t["odd"] = t_odd;
  t["even"] = t_even;
  t["divisibleby"] = t_divisibleby;
  t["eq"] = t["equalto"] = t["=="] = t_eq;
  t["ne"] = t["!="] = t_ne;
  t["lt"] = t["lessthan"] = t["<"] = t_lt;
  t["gt"] = t["greaterthan"] = t[">"] = t_gt;
  t["le"] = t["<="] = t_le;
  t["ge"] = t[">="] = t_ge;
  t["in"] = t_in;
  t["sameas"] = t_sameas;
  t["filter"] = t_filter;
  t["test"] = t_test;
}

}  // namespace gs::jinja
