// Interpreter behaviour beyond output parity: error messages with template lines, limits that
// stop hostile templates, Python number formatting and arithmetic on fresh random inputs
// (checked against /usr/bin/python3 when it is there).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "chat/jinja/json_value.h"
#include "chat/jinja/operators.h"
#include "chat/jinja/py_format.h"
#include "chat/jinja/template.h"
#include "core/error.h"

namespace gs::jinja {
namespace {

std::string render(const std::string& src, RenderLimits limits = {}) { return Template(src).render({}, limits); }

std::string error_of(const std::string& src, RenderLimits limits = {}) {
  try {
    render(src, limits);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(JinjaErrors, SyntaxErrorNamesLine) {
  std::string msg = error_of("line one\nline two\n{{ 1 + }}");
  EXPECT_NE(msg.find("syntax error (line 3)"), std::string::npos) << msg;
  msg = error_of("{% for x in y %}\n{% endif %}");
  EXPECT_NE(msg.find("line 2"), std::string::npos) << msg;
  EXPECT_NE(msg.find("endif"), std::string::npos) << msg;
  msg = error_of("{% if x %}\nnever closed");
  EXPECT_NE(msg.find("Unexpected end of template"), std::string::npos) << msg;
}

TEST(JinjaErrors, RaiseExceptionKeepsMessageAndLine) {
  std::string msg = error_of("{% for m in [1] %}\n\n  {{ raise_exception('Conversation roles must alternate!') }}{% endfor %}");
  EXPECT_NE(msg.find("line 3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("Conversation roles must alternate!"), std::string::npos) << msg;
}

TEST(JinjaErrors, UndefinedMessages) {
  EXPECT_NE(error_of("{{ nope.attr }}").find("'nope' is undefined"), std::string::npos);
  EXPECT_NE(error_of("{% set d = {} %}{{ d.a.b }}").find("'dict object' has no attribute 'a'"), std::string::npos);
  EXPECT_NE(error_of("{{ [].append(1) }}").find("unsafe"), std::string::npos);
}

TEST(JinjaLimits, EvaluationBudgetStopsLongLoops) {
  RenderLimits limits;
  limits.max_steps = 100000;
  std::string msg = error_of("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", limits);
  EXPECT_NE(msg.find("budget"), std::string::npos) << msg;
}

TEST(JinjaLimits, RecursionIsAnErrorNotACrash) {
  std::string msg = error_of("{% macro m(n) %}{{ m(n + 1) }}{% endmacro %}{{ m(0) }}");
  EXPECT_NE(msg.find("recursion"), std::string::npos) << msg;
  std::string deep = "{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}";
  msg = error_of(deep);
  EXPECT_NE(msg.find("nested too deeply"), std::string::npos) << msg;
  std::string blocks;
  for (int i = 0; i < 3000; ++i) blocks += "{% if true %}";
  msg = error_of(blocks);
  EXPECT_NE(msg.find("syntax error"), std::string::npos) << msg;
}

TEST(JinjaLimits, HugeStringsAndOutputAreRefused) {
  EXPECT_NE(error_of("{{ 'x' * 1000000000 }}").find("exceeds"), std::string::npos);
  RenderLimits limits;
  limits.max_output_bytes = 1000;
  EXPECT_NE(error_of("{% for i in range(100) %}0123456789abcdef{% endfor %}", limits).find("output exceeds"),
            std::string::npos);
  std::string nest = "{% set ns = namespace(v=[]) %}{% for i in range(1000) %}{% set ns.v = [ns.v] %}{% endfor %}";
  EXPECT_NE(error_of(nest).find("nested more than"), std::string::npos);
}

TEST(JinjaLimits, ReferenceCyclesAreReleased) {
  // Under AddressSanitizer's leak checker this fails if macros/namespaces keep each other alive.
  EXPECT_EQ(render("{% macro m() %}x{% endmacro %}{% set ns = namespace() %}{% set ns.me = ns %}{% set ns.m = m %}"
                   "{{ ns.m() }}"),
            "x");
}

TEST(PyFormat, FloatReprKnownValues) {
  EXPECT_EQ(float_repr(5e-324), "5e-324");
  EXPECT_EQ(float_repr(1.7976931348623157e308), "1.7976931348623157e+308");
  EXPECT_EQ(float_repr(123456789012345680.0), "1.2345678901234568e+17");
  EXPECT_EQ(float_repr(0.1), "0.1");
  EXPECT_EQ(float_repr(100.0), "100.0");
  EXPECT_EQ(float_repr(1e22), "1e+22");
  EXPECT_EQ(float_repr(1e-7), "1e-07");
  EXPECT_EQ(float_repr(9999999999999998.0), "9999999999999998.0");
  EXPECT_EQ(float_repr(0.000123), "0.000123");
  EXPECT_EQ(float_repr(-0.0), "-0.0");
}

TEST(PyFormat, StringRepr) {
  EXPECT_EQ(string_repr("it's"), "\"it's\"");
  EXPECT_EQ(string_repr("a\"b'c"), "'a\"b\\'c'");
  EXPECT_EQ(string_repr("\n\x01\xc3\xa9"), "'\\n\\x01\xc3\xa9'");
}

bool have_python() { return std::system("/usr/bin/python3 -c 'pass' >/dev/null 2>&1") == 0; }

// Runs `script` with /usr/bin/python3 on `input` and returns its stdout.
std::string python(const std::string& script, const std::string& input) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("gs_jinja_py_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "in.txt") << input;
  std::ofstream(dir / "s.py") << script;
  std::string cmd = "/usr/bin/python3 " + (dir / "s.py").string() + " < " + (dir / "in.txt").string() + " > " +
                    (dir / "out.txt").string();
  EXPECT_EQ(std::system(cmd.c_str()), 0);
  std::ifstream f(dir / "out.txt");
  std::stringstream ss;
  ss << f.rdbuf();
  fs::remove_all(dir);
  return ss.str();
}

TEST(PyFormat, FloatReprMatchesPythonOnRandomDoubles) {
  if (!have_python()) GTEST_SKIP() << "/usr/bin/python3 not available";
  std::mt19937_64 rng(std::random_device{}());
  std::ostringstream in, expect_cpp;
  for (int i = 0; i < 400; ++i) {
    double d;
    if (i % 2) {
      uint64_t bits = rng();
      std::memcpy(&d, &bits, sizeof d);
      if (!std::isfinite(d)) d = 1.5;
    } else {
      d = std::ldexp(static_cast<double>(rng() % 1000000) - 500000, static_cast<int>(rng() % 80) - 40);
    }
    char hex[64];
    std::snprintf(hex, sizeof hex, "%a", d);
    in << hex << "\n";
    expect_cpp << float_repr(d) << "\n";
  }
  std::string out = python("import sys\nfor l in sys.stdin: print(repr(float.fromhex(l.strip())))\n", in.str());
  EXPECT_EQ(expect_cpp.str(), out);
}

TEST(PyArithmetic, IntegerAndFloatOpsMatchPythonOnRandomInputs) {
  if (!have_python()) GTEST_SKIP() << "/usr/bin/python3 not available";
  std::mt19937_64 rng(std::random_device{}());
  const BinOp ops[] = {BinOp::Add, BinOp::Sub, BinOp::Mul, BinOp::Div, BinOp::FloorDiv, BinOp::Mod};
  const char* names[] = {"+", "-", "*", "/", "//", "%"};
  std::ostringstream in, cpp;
  for (int i = 0; i < 300; ++i) {
    int k = static_cast<int>(rng() % 6);
    bool floats = rng() % 2;
    int64_t a = static_cast<int64_t>(rng() % 2001) - 1000, b = static_cast<int64_t>(rng() % 41) - 20;
    if (b == 0) b = 7;
    Value va = floats ? Value::number(static_cast<double>(a) / 8) : Value::integer(a);
    Value vb = Value::integer(b);
    in << py_repr(va) << " " << names[k] << " " << b << "\n";
    cpp << py_repr(binary_op(ops[k], va, vb)) << "\n";
  }
  std::string out = python("import sys\nfor l in sys.stdin:\n a, op, b = l.split()\n print(repr(eval(a + op + b)))\n",
                           in.str());
  EXPECT_EQ(cpp.str(), out);
}

TEST(JsonValue, ToJsonLikePythonJsonDumps) {
  auto v = from_json(nlohmann::ordered_json::parse(R"({"z": 1, "a": [1.0, -0.5, 1e300, true, null, "é\u0001\"\\"], "m": {}})"));
  EXPECT_EQ(to_json(v), R"({"z": 1, "a": [1.0, -0.5, 1e+300, true, null, "é\u0001\"\\"], "m": {}})");
  JsonDumpOptions ascii;
  ascii.ensure_ascii = true;
  EXPECT_EQ(to_json(Value::string("é😀"), ascii), R"("\u00e9\ud83d\ude00")");
  JsonDumpOptions sorted;
  sorted.sort_keys = true;
  sorted.indent = " ";
  EXPECT_EQ(to_json(v, sorted), "{\n \"a\": [\n  1.0,\n  -0.5,\n  1e+300,\n  true,\n  null,\n  \"é\\u0001\\\"\\\\\"\n ],\n \"m\": {},\n \"z\": 1\n}");
  EXPECT_THROW(to_json(Value()), Error);
}

}  // namespace
}  // namespace gs::jinja
