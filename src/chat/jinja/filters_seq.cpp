// Filters on sequences and mappings: default, length, join, map, select..., dictsort, sort, ...
// Where jinja2 returns a generator, so do these (a one-shot iterator value).
#include <algorithm>

#include "chat/jinja/filter_table.h"
#include "chat/jinja/objects.h"
#include "chat/jinja/operators.h"
#include "chat/jinja/py_format.h"
#include "chat/jinja/registry.h"
#include "chat/jinja/utf8.h"
#include "core/error.h"

namespace gs::jinja {

namespace {

Value ignore_case(const Value& v) { return v.is_string() ? Value::string(utf8::lower(v.str())) : v; }

Value f_default(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder a("default", args, {"default_value", "boolean"});
  bool boolean = a.has(1) && truthy(*a.get(1));
  if (v.is_undefined() || (boolean && !truthy(v))) return a.get_or(0, Value::string(""));
  return v;
}

Value f_length(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder("length", args, {});
  return Value::integer(py_len(v));
}

Value f_list(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder("list", args, {});
  return Value::list(py_iterate(v));
}

Value f_first(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder("first", args, {});
  if (v.is_iterator()) {
    auto& it = v.iter();
    if (it.pos < it.items.size()) return it.items[it.pos++];
    return Value::undefined("No first item, sequence was empty.");
  }
  std::vector<Value> items = py_iterate(v);
  if (items.empty()) return Value::undefined("No first item, sequence was empty.");
  return items.front();
}

Value f_last(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder("last", args, {});
  if (v.is_iterator()) throw Error("'{}' object is not reversible", type_name(v));
  std::vector<Value> items = py_iterate(v);
  if (items.empty()) return Value::undefined("No last item, sequence was empty.");
  return items.back();
}

Value f_join(Interpreter& in, const Value& v, CallArgs& args) {
  ArgBinder a("join", args, {"d", "attribute"});
  std::string sep = a.has(0) ? py_str(*a.get(0)) : "";
  std::string out;
  bool first = true;
  for (const Value& item : py_iterate(v)) {
    if (!first) out += sep;
    first = false;
    out += py_str(a.has(1) && !a.get(1)->is_none() ? lookup_attribute_path(in, item, *a.get(1)) : item);
  }
  return Value::string(out);
}

Value f_map(Interpreter& in, const Value& v, CallArgs& args) {
  std::vector<Value> out;
  if (args.pos.empty() && !args.kw.empty() && args.kw[0].first == "attribute") {
    ArgBinder a("map", args, {"attribute", "default"});
    if (truthy(v))
      for (const Value& item : py_iterate(v)) out.push_back(lookup_attribute_path(in, item, *a.get(0), a.get(1)));
    return Value::iterator(std::move(out));
  }
  for (const auto& [k, val] : args.kw)
    GS_CHECK(!args.pos.empty() || k != "attribute", "Unexpected keyword argument '{}'", k);
  GS_CHECK(!args.pos.empty(), "map requires a filter argument");
  GS_CHECK(args.pos[0].is_string(), "map: the filter name must be a string");
  std::string name = args.pos[0].str();
  CallArgs rest;
  rest.pos.assign(args.pos.begin() + 1, args.pos.end());
  rest.kw = args.kw;
  if (truthy(v))
    for (const Value& item : py_iterate(v)) {
      in.step();
      CallArgs call = rest;
      out.push_back(apply_filter(in, name, item, call));
    }
  return Value::iterator(std::move(out));
}

// select / reject / selectattr / rejectattr.
Value select_impl(Interpreter& in, const Value& v, CallArgs& args, bool keep_if, bool by_attr) {
  std::vector<Value> out;
  if (!truthy(v)) return Value::iterator(std::move(out));
  size_t off = 0;
  Value attr;
  if (by_attr) {
    GS_CHECK(!args.pos.empty(), "Missing parameter for attribute name");
    attr = args.pos[0];
    off = 1;
  }
  std::string test;
  CallArgs test_args;
  if (args.pos.size() > off) {
    GS_CHECK(args.pos[off].is_string(), "the test name must be a string");
    test = args.pos[off].str();
    test_args.pos.assign(args.pos.begin() + static_cast<std::ptrdiff_t>(off) + 1, args.pos.end());
    test_args.kw = args.kw;
  }
  for (const Value& item : py_iterate(v)) {
    in.step();
    Value x = by_attr ? lookup_attribute_path(in, item, attr) : item;
    bool r;
    if (test.empty()) {
      r = truthy(x);
    } else {
      CallArgs call = test_args;
      r = apply_test(in, test, x, call);
    }
    if (r == keep_if) out.push_back(item);
  }
  return Value::iterator(std::move(out));
}

Value f_select(Interpreter& in, const Value& v, CallArgs& a) { return select_impl(in, v, a, true, false); }
Value f_reject(Interpreter& in, const Value& v, CallArgs& a) { return select_impl(in, v, a, false, false); }
Value f_selectattr(Interpreter& in, const Value& v, CallArgs& a) { return select_impl(in, v, a, true, true); }
Value f_rejectattr(Interpreter& in, const Value& v, CallArgs& a) { return select_impl(in, v, a, false, true); }

// Python's sorted(..., key=..., reverse=...): stable, and reverse keeps equal items in order.
void py_sort(std::vector<std::pair<Value, Value>>& keyed, bool reverse) {
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
    return reverse ? py_less(y.first, x.first) : py_less(x.first, y.first);
  });
}

Value f_dictsort(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder a("dictsort", args, {"case_sensitive", "by", "reverse"});
  bool case_sensitive = a.has(0) && truthy(*a.get(0));
  std::string by = a.has(1) ? py_str(*a.get(1)) : "key";
  GS_CHECK(by == "key" || by == "value", "You can only sort by either \"key\" or \"value\"");
  require_defined(v);
  GS_CHECK(v.is_dict(), "'{}' object has no attribute 'items'", type_name(v));
  std::vector<std::pair<Value, Value>> keyed;
  for (const auto& [k, val] : v.dict().items) {
    Value key = by == "key" ? k : val;
    keyed.emplace_back(case_sensitive ? key : ignore_case(key), Value::tuple({k, val}));
  }
  py_sort(keyed, a.has(2) && truthy(*a.get(2)));
  std::vector<Value> out;
  for (auto& kv : keyed) out.push_back(std::move(kv.second));
  return Value::list(std::move(out));
}

Value f_items(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder("items", args, {});
  std::vector<Value> out;
  if (v.is_undefined()) return Value::iterator(std::move(out));
  GS_CHECK(v.is_dict(), "Can only get item pairs from a mapping.");
  for (const auto& [k, val] : v.dict().items) out.push_back(Value::tuple({k, val}));
  return Value::iterator(std::move(out));
}

// Sort key of jinja2's make_multi_attrgetter: "a,b" compares tuples of attributes.
Value sort_key(Interpreter& in, const Value& item, const Value* attribute, bool case_sensitive) {
  auto post = [&](const Value& x) { return case_sensitive ? x : ignore_case(x); };
  if (!attribute || attribute->is_none()) return post(item);
  if (attribute->is_string() && attribute->str().find(',') != std::string::npos) {
    std::vector<Value> parts;
    const std::string& s = attribute->str();
    size_t start = 0;
    while (true) {
      size_t c = s.find(',', start);
      parts.push_back(post(lookup_attribute_path(in, item, Value::string(s.substr(start, c - start)))));
      if (c == std::string::npos) break;
      start = c + 1;
    }
    return Value::list(std::move(parts));
  }
  return post(lookup_attribute_path(in, item, *attribute));
}

Value f_sort(Interpreter& in, const Value& v, CallArgs& args) {
  ArgBinder a("sort", args, {"reverse", "case_sensitive", "attribute"});
  bool case_sensitive = a.has(1) && truthy(*a.get(1));
  std::vector<std::pair<Value, Value>> keyed;
  for (Value& item : py_iterate(v)) keyed.emplace_back(sort_key(in, item, a.get(2), case_sensitive), item);
  py_sort(keyed, a.has(0) && truthy(*a.get(0)));
  std::vector<Value> out;
  for (auto& kv : keyed) out.push_back(std::move(kv.second));
  return Value::list(std::move(out));
}

Value f_reverse(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder("reverse", args, {});
  if (v.is_string()) {
    std::u32string cps = utf8::decode(v.str());
    std::reverse(cps.begin(), cps.end());
    return Value::string(utf8::encode(cps));
  }
  bool one_shot = v.is_iterator();
  std::vector<Value> items = py_iterate(v);
  std::reverse(items.begin(), items.end());
  if (one_shot) return Value::list(std::move(items));  // jinja2: list(value) reversed
  return Value::iterator(std::move(items), v.is_dict() ? "dict_reversekeyiterator" : "list_reverseiterator");
}

Value f_unique(Interpreter& in, const Value& v, CallArgs& args) {
  ArgBinder a("unique", args, {"case_sensitive", "attribute"});
  bool case_sensitive = a.has(0) && truthy(*a.get(0));
  std::vector<Value> seen, out;
  for (const Value& item : py_iterate(v)) {
    charge_work(static_cast<int64_t>(seen.size()) + 1);
    Value key = sort_key(in, item, a.get(1), case_sensitive);
    if (std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return py_equal(s, key); })) continue;
    seen.push_back(key);
    out.push_back(item);
  }
  return Value::iterator(std::move(out));
}

Value min_max(Interpreter& in, const Value& v, CallArgs& args, bool want_max) {
  ArgBinder a(want_max ? "max" : "min", args, {"case_sensitive", "attribute"});
  bool case_sensitive = a.has(0) && truthy(*a.get(0));
  std::vector<Value> items = py_iterate(v);
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  size_t best = 0;
  Value best_key = sort_key(in, items[0], a.get(1), case_sensitive);
  for (size_t i = 1; i < items.size(); ++i) {
    Value key = sort_key(in, items[i], a.get(1), case_sensitive);
    if (want_max ? py_less(best_key, key) : py_less(key, best_key)) best = i, best_key = key;
  }
  return items[best];
}
Value f_max(Interpreter& in, const Value& v, CallArgs& a) { return min_max(in, v, a, true); }
Value f_min(Interpreter& in, const Value& v, CallArgs& a) { return min_max(in, v, a, false); }

Value f_sum(Interpreter& in, const Value& v, CallArgs& args) {
  ArgBinder a("sum", args, {"attribute", "start"});
  Value total = a.get_or(1, Value::integer(0));
  for (const Value& item : py_iterate(v)) {
    Value x = a.has(0) && !a.get(0)->is_none() ? lookup_attribute_path(in, item, *a.get(0)) : item;
    total = binary_op(BinOp::Add, total, x);
  }
  return total;
}

Value f_batch(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder a("batch", args, {"linecount", "fill_with"});
  GS_CHECK(a.has(0), "batch() missing required argument 'linecount'");
  int64_t n = a.get(0)->as_int();
  GS_CHECK(n > 0, "batch linecount must be positive");
  std::vector<Value> out, tmp;
  for (Value& item : py_iterate(v)) {
    if (static_cast<int64_t>(tmp.size()) == n) out.push_back(Value::list(std::exchange(tmp, {})));
    tmp.push_back(item);
  }
  if (!tmp.empty()) {
    if (a.has(1) && !a.get(1)->is_none())
      while (static_cast<int64_t>(tmp.size()) < n) tmp.push_back(*a.get(1));
    out.push_back(Value::list(std::move(tmp)));
  }
  return Value::iterator(std::move(out));
}

// attr() looks up a Python attribute only, never an item (unlike `.name`).
Value f_attr(Interpreter& in, const Value& v, CallArgs& args) {
  ArgBinder a("attr", args, {"name"});
  GS_CHECK(a.has(0), "attr() missing required argument 'name'");
  std::string name = py_str(*a.get(0));
  require_defined(v);
  if (v.is_object()) {
    if (auto r = v.obj().getattr(name)) return *r;
  } else if (method_access(v, name) != MethodAccess::None) {
    return in.getattr(v, name);
  }
  return Value::undefined("'" + object_type_repr(v) + "' has no attribute '" + name + "'");
}

}  // namespace

void add_sequence_filters(FilterTable& t) {
  t["default"] = f_default;
  t["d"] = f_default;
  t["length"] = f_length;
  t["count"] = f_length;
  t["list"] = f_list;
  t["first"] = f_first;
  t["last"] = f_last;
  t["join"] = f_join;
  t["map"] = f_map;
  t["select"] = f_select;
  t["reject"] = f_reject;
  t["selectattr"] = f_selectattr;
  t["rejectattr"] = f_rejectattr;
  t["dictsort"] = f_dictsort;
  t["items"] = f_items;
  t["sort"] = f_sort;
  t["reverse"] = f_reverse;
  t["unique"] = f_unique;
  t["max"] = f_max;
  t["min"] = f_min;
  t["sum"] = f_sum;
  t["batch"] = f_batch;
  t["attr"] = f_attr;
}

}  // namespace gs::jinja
