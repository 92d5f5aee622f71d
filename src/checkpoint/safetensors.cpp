#include "checkpoint/safetensors.h"

#include <nlohmann/json.hpp>

#include <algorithm>

#include "core/error.h"

namespace gs {

namespace {

using nlohmann::json;

// Names come from untrusted files: keep error messages bounded.
std::string clip(const std::string& s) {
  return s.size() <= 200 ? s : s.substr(0, 200) + "...";
}

// A valid header nests at most three levels (object -> tensor object -> shape array). Refusing
// deeper input before handing it to the JSON parser keeps hostile files from exhausting the stack
// when the parsed value is walked or destroyed.
bool nesting_within(const uint8_t* p, size_t n, int max_depth) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < n; ++i) {
    uint8_t c = p[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '{' || c == '[') {
      if (++depth > max_depth) return false;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return true;
}

bool checked_mul(size_t a, size_t b, size_t* out) { return !__builtin_mul_overflow(a, b, out); }

SafetensorsTensor parse_entry(const std::string& name, const json& e, size_t data_start, size_t data_size,
                              const std::string& label) {
  auto fail = [&](const std::string& what) {
    return Error("{}: tensor '{}': {}", label, clip(name), what);
  };
  if (!e.is_object()) throw fail("header entry is not a JSON object");
  for (auto it = e.begin(); it != e.end(); ++it)
    if (it.key() != "dtype" && it.key() != "shape" && it.key() != "data_offsets")
      throw fail("unexpected field '" + clip(it.key()) + "'");

  SafetensorsTensor t;
  t.name = name;
  auto dt = e.find("dtype");
  if (dt == e.end() || !dt->is_string()) throw fail("missing or non-string 'dtype'");
  const std::string& dts = dt->get_ref<const std::string&>();
  if (!parse_safetensors_dtype(dts, &t.dtype))
    throw fail("unsupported dtype '" + clip(dts) + "' (expected BF16, F16, F32, I32, I64 or U8)");

  auto sh = e.find("shape");
  if (sh == e.end() || !sh->is_array()) throw fail("missing or non-array 'shape'");
  size_t numel = 1;
  for (const json& d : *sh) {
    if (!d.is_number_unsigned()) throw fail("shape " + clip(sh->dump()) + " has a non-integer or negative dimension");
    uint64_t v = d.get<uint64_t>();
    if (v > uint64_t(INT64_MAX) || !checked_mul(numel, size_t(v), &numel))
      throw fail("shape " + clip(sh->dump()) + " overflows");
    t.shape.push_back(int64_t(v));
  }
  size_t expect = 0;
  if (!checked_mul(numel, dtype_size(t.dtype), &expect)) throw fail("shape " + clip(sh->dump()) + " overflows");

  auto off = e.find("data_offsets");
  if (off == e.end() || !off->is_array() || off->size() != 2 || !(*off)[0].is_number_unsigned() ||
      !(*off)[1].is_number_unsigned())
    throw fail("'data_offsets' must be two non-negative integers");
  uint64_t begin = (*off)[0].get<uint64_t>(), end = (*off)[1].get<uint64_t>();
  if (begin > end) throw fail(fmt::format("data_offsets [{}, {}] are reversed", begin, end));
  if (end > data_size)
    throw fail(fmt::format("data_offsets [{}, {}] run past the end of the data section ({} bytes); is the file "
                           "truncated?",
                           begin, end, data_size));
  if (end - begin != expect)
    throw fail(fmt::format("{} {} needs {} bytes but data_offsets [{}, {}] span {}", dts, shape_str(t.shape),
                           expect, begin, end, end - begin));
  t.offset = data_start + size_t(begin);
  t.nbytes = size_t(end - begin);
  return t;
}

}  // namespace

std::string shape_str(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

SafetensorsHeader parse_safetensors(const uint8_t* bytes, size_t size, const std::string& label) {
  if (size < 8)
    throw Error("{}: not a safetensors file: {} bytes is shorter than the 8-byte header length", label, size);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | bytes[i];  // little-endian
  if (n > kMaxSafetensorsHeader)
    throw Error("{}: corrupt safetensors header length {} (limit {} bytes)", label, n, kMaxSafetensorsHeader);
  if (n > size - 8)
    throw Error("{}: corrupt safetensors header length {}: the file has only {} bytes after it (truncated?)", label,
                n, size - 8);
  const uint8_t* h = bytes + 8;
  if (!nesting_within(h, size_t(n), 8)) throw Error("{}: bad safetensors JSON header: nested too deeply", label);
  json j = json::parse(h, h + n, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw Error("{}: bad safetensors JSON header: not well-formed JSON", label);
  if (!j.is_object()) throw Error("{}: bad safetensors JSON header: expected an object, got {}", label, j.type_name());

  SafetensorsHeader out;
  out.data_start = 8 + size_t(n);
  const size_t data_size = size - out.data_start;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it->is_object()) throw Error("{}: '__metadata__' must be an object of strings", label);
      for (auto m = it->begin(); m != it->end(); ++m) {
        if (!m->is_string())
          throw Error("{}: '__metadata__' entry '{}' is not a string", label, clip(m.key()));
        out.metadata[m.key()] = m->get<std::string>();
      }
      continue;
    }
    out.tensors.push_back(parse_entry(it.key(), *it, out.data_start, data_size, label));
  }
  std::sort(out.tensors.begin(), out.tensors.end(), [](const SafetensorsTensor& a, const SafetensorsTensor& b) {
    return a.offset != b.offset ? a.offset < b.offset : a.nbytes < b.nbytes;
  });
  for (size_t i = 1; i < out.tensors.size(); ++i) {
    const auto& a = out.tensors[i - 1];
    const auto& b = out.tensors[i];
    if (b.offset < a.offset + a.nbytes)
      throw Error("{}: tensors '{}' and '{}' overlap (data_offsets [{}, {}) and [{}, {}))", label, clip(a.name),
                  clip(b.name), a.offset - out.data_start, a.offset - out.data_start + a.nbytes,
                  b.offset - out.data_start, b.offset - out.data_start + b.nbytes);
  }
  return out;
}

SafetensorsFile::SafetensorsFile(const std::string& path) : file_(path) {
  header_ = parse_safetensors(file_.data(), file_.size(), path);
  for (size_t i = 0; i < header_.tensors.size(); ++i) by_name_[header_.tensors[i].name] = i;
}

const SafetensorsTensor* SafetensorsFile::find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &header_.tensors[it->second];
}

}  // namespace gs
