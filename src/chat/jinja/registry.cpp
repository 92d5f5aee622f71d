#include "chat/jinja/registry.h"

#include "chat/jinja/filter_table.h"
#include "core/error.h"

namespace gs::jinja {

static const FilterTable& filters() {
  static const FilterTable table = [] {
    FilterTable t;
    add_text_filters(t);
    add_sequence_filters(t);
    return t;
  }();
  return table;
}

static const TestTable& tests() {
  static const TestTable table = [] {
    TestTable t;
    add_tests(t);
    return t;
  }();
  return table;
}

bool is_known_filter(const std::string& name) { return filters().count(name) != 0; }
bool is_known_test(const std::string& name) { return tests().count(name) != 0; }

Value apply_filter(Interpreter& in, const std::string& name, const Value& input, CallArgs& args) {
  auto it = filters().find(name);
  if (it == filters().end()) throw Error("No filter named '{}' found.", name);
  return it->second(in, input, args);
}

bool apply_test(Interpreter& in, const std::string& name, const Value& input, CallArgs& args) {
  auto it = tests().find(name);
  if (it == tests().end()) throw Error("No test named '{}' found.", name);
  return it->second(in, input, args);
}

Value lookup_attribute_path(Interpreter& in, const Value& item, const Value& path, const Value* def) {
  std::vector<Value> parts;
  if (path.is_string()) {
    const std::string& s = path.str();
    size_t start = 0;
    while (true) {
      size_t dot = s.find('.', start);
      std::string part = s.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
      bool digits = !part.empty() && part.find_first_not_of("0123456789") == std::string::npos;
      parts.push_back(digits && part.size() < 18 ? Value::integer(std::stoll(part)) : Value::string(part));
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
  } else {
    parts.push_back(path);
  }
  Value v = item;
  for (const auto& p : parts) v = in.getitem(v, p);
  if (def && !def->is_none() && v.is_undefined()) return *def;
  return v;
}

}  // namespace gs::jinja
