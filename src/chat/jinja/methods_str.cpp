// Python str methods. Searching and splitting work on UTF-8 bytes (UTF-8 is self-synchronising,
// so results equal code point operations); indices and widths are converted to code points.
#include <algorithm>

#include "chat/jinja/args.h"
#include "chat/jinja/interpreter.h"
#include "chat/jinja/operators.h"
#include "chat/jinja/py_format.h"
#include "chat/jinja/str_format.h"
#include "chat/jinja/utf8.h"
#include "core/error.h"

namespace gs::jinja {

namespace {

const std::string& str_arg(const ArgBinder& a, size_t i, const char* what) {
  const Value* v = a.get(i);
  GS_CHECK(v && v->is_string(), "{}() argument {} must be str, not {}", a.fn(), what,
           v ? type_name(*v) : std::string("nothing"));
  return v->str();
}

// Byte offset of code point index `cp` (clamped), Python slice rules for negatives.
size_t byte_offset(const std::string& s, const Value* idx, size_t def_cp) {
  int64_t n = static_cast<int64_t>(utf8::length(s));
  int64_t i = static_cast<int64_t>(def_cp);
  if (idx && !idx->is_none()) {
    GS_CHECK(idx->is_int() || idx->is_bool(), "slice indices must be integers or None");
    i = idx->as_int();
    if (i < 0) i = std::max<int64_t>(0, i + n);
    i = std::min(i, n);
  }
  size_t off = 0;
  for (int64_t k = 0; k < i; ++k) {
    ++off;
    while (off < s.size() && (static_cast<unsigned char>(s[off]) & 0xC0) == 0x80) ++off;
  }
  return off;
}

int64_t cp_index(const std::string& s, size_t byte_off) {
  return static_cast<int64_t>(utf8::length(std::string_view(s).substr(0, byte_off)));
}

std::string strip_method(const std::string& s, const ArgBinder& a, bool left, bool right) {
  const Value* chars = a.get(0);
  if (!chars || chars->is_none()) return std::string(utf8::strip(s, left, right));
  GS_CHECK(chars->is_string(), "{} arg must be None or str", a.fn());
  return utf8::strip_chars(s, chars->str(), left, right);
}

Value split_method(const std::string& s, const ArgBinder& a, bool from_right) {
  const Value* sep_v = a.get(0);
  int64_t maxsplit = a.has(1) ? a.get(1)->as_int() : -1;
  std::vector<std::string> parts;
  if (!sep_v || sep_v->is_none()) {
    // Runs of whitespace separate; leading/trailing whitespace yields no empty parts.
    std::u32string cps = utf8::decode(s);
    std::vector<std::u32string> words;
    if (!from_right) {
      size_t i = 0;
      while (true) {
        while (i < cps.size() && utf8::is_space(cps[i])) ++i;
        if (i >= cps.size()) break;
        if (maxsplit >= 0 && static_cast<int64_t>(words.size()) == maxsplit) {
          size_t e = cps.size();
          while (e > i && utf8::is_space(cps[e - 1])) --e;
          words.push_back(cps.substr(i, e - i));
          break;
        }
        size_t j = i;
        while (j < cps.size() && !utf8::is_space(cps[j])) ++j;
        words.push_back(cps.substr(i, j - i));
        i = j;
      }
    } else {
      size_t i = cps.size();
      while (true) {
        while (i > 0 && utf8::is_space(cps[i - 1])) --i;
        if (i == 0) break;
        if (maxsplit >= 0 && static_cast<int64_t>(words.size()) == maxsplit) {
          size_t b = 0;
          while (b < i && utf8::is_space(cps[b])) ++b;
          words.push_back(cps.substr(b, i - b));
          break;
        }
        size_t j = i;
        while (j > 0 && !utf8::is_space(cps[j - 1])) --j;
        words.push_back(cps.substr(j, i - j));
        i = j;
      }
      std::reverse(words.begin(), words.end());
    }
    for (auto& w : words) parts.push_back(utf8::encode(w));
  } else {
    GS_CHECK(sep_v->is_string(), "must be str or None, not {}", type_name(*sep_v));
    const std::string& sep = sep_v->str();
    GS_CHECK(!sep.empty(), "empty separator");
    if (!from_right) {
      size_t start = 0;
      while (true) {
        size_t p = s.find(sep, start);
        if (p == std::string::npos || (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit)) break;
        parts.push_back(s.substr(start, p - start));
        start = p + sep.size();
      }
      parts.push_back(s.substr(start));
    } else {
      size_t end = s.size();
      while (true) {
        size_t p = end >= sep.size() ? s.rfind(sep, end - sep.size()) : std::string::npos;
        if (p == std::string::npos || (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit)) break;
        parts.push_back(s.substr(p + sep.size(), end - p - sep.size()));
        end = p;
      }
      parts.push_back(s.substr(0, end));
      std::reverse(parts.begin(), parts.end());
    }
  }
  std::vector<Value> out;
  for (auto& p : parts) out.push_back(Value::string(std::move(p)));
  return Value::list(std::move(out));
}

Value splitlines(const std::string& s, bool keepends) {
  std::u32string cps = utf8::decode(s);
  std::vector<Value> out;
  size_t start = 0;
  for (size_t i = 0; i < cps.size(); ++i) {
    char32_t c = cps[i];
    bool brk = c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || c == 0x1C || c == 0x1D || c == 0x1E ||
               c == 0x85 || c == 0x2028 || c == 0x2029;
    if (!brk) continue;
    size_t end = i;
    if (c == '\r' && i + 1 < cps.size() && cps[i + 1] == '\n') ++i;
    out.push_back(Value::string(utf8::encode(std::u32string_view(cps).substr(start, (keepends ? i + 1 : end) - start))));
    start = i + 1;
  }
  if (start < cps.size()) out.push_back(Value::string(utf8::encode(std::u32string_view(cps).substr(start))));
  return Value::list(std::move(out));
}

bool affix_match(const std::string& s, const ArgBinder& a, bool prefix) {
  size_t b = byte_offset(s, a.get(1), 0), e = byte_offset(s, a.get(2), utf8::length(s));
  std::string_view view = b <= e ? std::string_view(s).substr(b, e - b) : std::string_view();
  if (b > e) return false;
  auto test = [&](const Value& v) {
    GS_CHECK(v.is_string(), "{} first arg must be str or a tuple of str, not {}", a.fn(), type_name(v));
    const std::string& x = v.str();
    if (x.size() > view.size()) return false;
    return prefix ? view.substr(0, x.size()) == x : view.substr(view.size() - x.size()) == x;
  };
  const Value* p = a.get(0);
  GS_CHECK(p, "{}() takes at least 1 argument (0 given)", a.fn());
  if (p->is_tuple()) return std::any_of(p->list().items.begin(), p->list().items.end(), test);
  return test(*p);
}

std::string replace_all(const std::string& s, const std::string& from, const std::string& to, int64_t count) {
  std::string out;
  int64_t done = 0;
  if (from.empty()) {
    std::u32string cps = utf8::decode(s);
    for (size_t i = 0; i <= cps.size(); ++i) {
      if (count < 0 || done < count) {
        out += to;
        ++done;
      }
      if (i < cps.size()) utf8::append(out, cps[i]);
      check_string_size(out.size());
    }
    return out;
  }
  size_t start = 0;
  while (count < 0 || done < count) {
    size_t p = s.find(from, start);
    if (p == std::string::npos) break;
    out.append(s, start, p - start);
    out += to;
    check_string_size(out.size());
    start = p + from.size();
    ++done;
  }
  out.append(s, start, std::string::npos);
  return out;
}

std::string pad(const std::string& s, const ArgBinder& a, char align) {
  GS_CHECK(a.has(0), "{}() takes at least 1 argument (0 given)", a.fn());
  int64_t width = a.get(0)->as_int();
  std::string fill = " ";
  if (a.has(1)) {
    fill = str_arg(a, 1, "2");
    GS_CHECK(utf8::length(fill) == 1, "The fill character must be exactly one character long");
  }
  int64_t len = static_cast<int64_t>(utf8::length(s));
  if (width <= len) return s;
  check_string_size(static_cast<size_t>(width) * fill.size());
  int64_t marg = width - len, left = 0;
  if (align == '>') left = marg;
  else if (align == '^') left = marg / 2 + (marg & width & 1);
  std::string out;
  for (int64_t i = 0; i < left; ++i) out += fill;
  out += s;
  for (int64_t i = 0; i < marg - left; ++i) out += fill;
  return out;
}

template <typename Pred>
bool all_chars(const std::string& s, Pred p) {
  std::u32string cps = utf8::decode(s);
  return !cps.empty() && std::all_of(cps.begin(), cps.end(), p);
}

std::string title_case(const std::string& s) {
  std::string out;
  bool prev_cased = false;
  for (char32_t c : utf8::decode(s)) {
    utf8::append(out, prev_cased ? utf8::to_lower(c) : utf8::to_upper(c));
    prev_cased = utf8::is_cased_lower(c) || utf8::is_cased_upper(c);
  }
  return out;
}

}  // namespace

Value call_str_method(Interpreter& in, const std::string& s, const std::string& name, CallArgs& args) {
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    ArgBinder a(name, args, {"chars"});
    return Value::string(strip_method(s, a, name != "rstrip", name != "lstrip"));
  }
  if (name == "split" || name == "rsplit") return split_method(s, ArgBinder(name, args, {"sep", "maxsplit"}), name == "rsplit");
  if (name == "splitlines") {
    ArgBinder a(name, args, {"keepends"});
    return splitlines(s, a.has(0) && truthy(*a.get(0)));
  }
  if (name == "startswith" || name == "endswith")
    return Value::boolean(affix_match(s, ArgBinder(name, args, {"prefix", "start", "end"}), name == "startswith"));
  if (name == "replace") {
    ArgBinder a(name, args, {"old", "new", "count"});
    return Value::string(replace_all(s, str_arg(a, 0, "1"), str_arg(a, 1, "2"), a.has(2) ? a.get(2)->as_int() : -1));
  }
  if (name == "lower" || name == "casefold") return Value::string(utf8::lower(s));
  if (name == "upper") return Value::string(utf8::upper(s));
  if (name == "title") return Value::string(title_case(s));
  if (name == "capitalize") {
    std::u32string cps = utf8::decode(s);
    std::string out;
    for (size_t i = 0; i < cps.size(); ++i) utf8::append(out, i == 0 ? utf8::to_upper(cps[i]) : utf8::to_lower(cps[i]));
    return Value::string(out);
  }
  if (name == "swapcase") {
    std::string out;
    for (char32_t c : utf8::decode(s))
      utf8::append(out, utf8::is_cased_upper(c) ? utf8::to_lower(c) : utf8::to_upper(c));
    return Value::string(out);
  }
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex" || name == "count") {
    ArgBinder a(name, args, {"sub", "start", "end"});
    const std::string& sub = str_arg(a, 0, "1");
    size_t b = byte_offset(s, a.get(1), 0), e = byte_offset(s, a.get(2), utf8::length(s));
    if (name == "count") {
      if (b > e) return Value::integer(0);
      if (sub.empty()) return Value::integer(cp_index(s, e) - cp_index(s, b) + 1);
      int64_t n = 0;
      for (size_t p = s.find(sub, b); p != std::string::npos && p + sub.size() <= e; p = s.find(sub, p + sub.size())) ++n;
      return Value::integer(n);
    }
    size_t found = std::string::npos;
    if (b <= e && sub.size() <= e - b) {
      std::string_view view = std::string_view(s).substr(b, e - b);
      size_t p = name[0] == 'r' ? view.rfind(sub) : view.find(sub);
      if (p != std::string_view::npos) found = b + p;
    }
    if (found == std::string::npos) {
      GS_CHECK(name == "find" || name == "rfind", "substring not found");
      return Value::integer(-1);
    }
    return Value::integer(cp_index(s, found));
  }
  if (name == "join") {
    ArgBinder a(name, args, {"iterable"});
    GS_CHECK(a.has(0), "join() takes exactly one argument (0 given)");
    std::string out;
    size_t i = 0;
    for (const Value& v : py_iterate(*a.get(0))) {
      GS_CHECK(v.is_string(), "sequence item {}: expected str instance, {} found", i, type_name(v));
      if (i++) out += s;
      out += v.str();
      check_string_size(out.size());
    }
    return Value::string(out);
  }
  if (name == "format") return Value::string(str_format(in, s, args));
  if (name == "center" || name == "ljust" || name == "rjust")
    return Value::string(pad(s, ArgBinder(name, args, {"width", "fillchar"}), name == "center" ? '^' : name == "ljust" ? '<' : '>'));
  if (name == "zfill") {
    ArgBinder a(name, args, {"width"});
    GS_CHECK(a.has(0), "zfill() takes exactly one argument (0 given)");
    int64_t width = a.get(0)->as_int(), len = static_cast<int64_t>(utf8::length(s));
    if (width <= len) return Value::string(s);
    check_string_size(static_cast<size_t>(width));
    size_t sign = (!s.empty() && (s[0] == '+' || s[0] == '-')) ? 1 : 0;
    return Value::string(s.substr(0, sign) + std::string(static_cast<size_t>(width - len), '0') + s.substr(sign));
  }
  if (name == "partition" || name == "rpartition") {
    ArgBinder a(name, args, {"sep"});
    const std::string& sep = str_arg(a, 0, "1");
    GS_CHECK(!sep.empty(), "empty separator");
    size_t p = name == "partition" ? s.find(sep) : s.rfind(sep);
    if (p == std::string::npos) {
      if (name == "partition") return Value::tuple({Value::string(s), Value::string(""), Value::string("")});
      return Value::tuple({Value::string(""), Value::string(""), Value::string(s)});
    }
    return Value::tuple({Value::string(s.substr(0, p)), Value::string(sep), Value::string(s.substr(p + sep.size()))});
  }
  if (name == "removeprefix" || name == "removesuffix") {
    ArgBinder a(name, args, {"affix"});
    const std::string& x = str_arg(a, 0, "1");
    if (name == "removeprefix") return Value::string(s.compare(0, x.size(), x) == 0 ? s.substr(x.size()) : s);
    bool ends = s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0;
    return Value::string(ends ? s.substr(0, s.size() - x.size()) : s);
  }
  if (name == "isdigit" || name == "isdecimal" || name == "isnumeric") return Value::boolean(all_chars(s, utf8::is_digit));
  if (name == "isalpha") return Value::boolean(all_chars(s, utf8::is_alpha));
  if (name == "isalnum")
    return Value::boolean(all_chars(s, [](char32_t c) { return utf8::is_alpha(c) || utf8::is_digit(c); }));
  if (name == "isspace") return Value::boolean(all_chars(s, utf8::is_space));
  if (name == "isascii") return Value::boolean(std::all_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; }));
  if (name == "isprintable") return Value::boolean(s.empty() || all_chars(s, utf8::is_printable));
  if (name == "islower" || name == "isupper") {
    bool any_cased = false, ok = true;
    for (char32_t c : utf8::decode(s)) {
      bool lo = utf8::is_cased_lower(c), up = utf8::is_cased_upper(c);
      any_cased |= lo || up;
      if (name == "islower" ? up : lo) ok = false;
    }
    return Value::boolean(any_cased && ok);
  }
  if (name == "istitle") return Value::boolean(title_case(s) == s && s != utf8::lower(s));
  throw Error("str.{}() is not supported in templates", name);
}

}  // namespace gs::jinja
