#include "tokenizer/gguf_metadata.h"

#include <cstring>

#include "core/error.h"

namespace gs {

namespace {
using Type = GgufMetadata::Type;

size_t scalar_size(Type t) {
  switch (t) {
    case Type::kU8: case Type::kI8: case Type::kBool: return 1;
    case Type::kU16: case Type::kI16: return 2;
    case Type::kU32: case Type::kI32: case Type::kF32: return 4;
    case Type::kU64: case Type::kI64: case Type::kF64: return 8;
    default: return 0;
  }
}

const char* type_name(Type t) {
  static const char* names[] = {"u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64"};
  const auto i = static_cast<uint32_t>(t);
  return i < 13 ? names[i] : "unknown";
}

bool is_int(Type t) {
  return t == Type::kU8 || t == Type::kI8 || t == Type::kU16 || t == Type::kI16 || t == Type::kU32 ||
         t == Type::kI32 || t == Type::kU64 || t == Type::kI64;
}
}  // namespace

template <typename T>
T GgufMetadata::read(size_t pos, const std::string& key) const {
  GS_CHECK(pos <= size_ && size_ - pos >= sizeof(T), "{}: truncated GGUF file (reading {} at byte {})", source_,
           key.empty() ? "the header" : "'" + key + "'", pos);
  T v;
  std::memcpy(&v, data_ + pos, sizeof(T));
  return v;
}

size_t GgufMetadata::read_string(size_t pos, std::string_view* out, const std::string& key) const {
  const auto len = read<uint64_t>(pos, key);
  pos += 8;
  GS_CHECK(len <= size_ - pos, "{}: truncated GGUF file (a string of {} bytes in '{}' runs past the end)", source_, len,
           key);
  if (out) *out = std::string_view(reinterpret_cast<const char*>(data_ + pos), static_cast<size_t>(len));
  return pos + static_cast<size_t>(len);
}

size_t GgufMetadata::skip_value(Type type, size_t pos, const std::string& key, int depth) const {
  if (type == Type::kString) return read_string(pos, nullptr, key);
  if (type == Type::kArray) {
    GS_CHECK(depth < 4, "{}: '{}' nests arrays too deeply", source_, key);
    const auto elem = static_cast<Type>(read<uint32_t>(pos, key));
    const auto n = read<uint64_t>(pos + 4, key);
    pos += 12;
    if (const size_t sz = scalar_size(elem)) {
      GS_CHECK(n <= (size_ - pos) / sz, "{}: truncated GGUF file (array '{}' of {} elements runs past the end)", source_,
               key, n);
      return pos + static_cast<size_t>(n) * sz;
    }
    GS_CHECK(elem == Type::kString || elem == Type::kArray, "{}: '{}' has unknown array element type {}", source_, key,
             static_cast<uint32_t>(elem));
    // Every string or array takes at least 8 bytes, which bounds a corrupt count.
    GS_CHECK(n <= (size_ - pos) / 8, "{}: truncated GGUF file (array '{}' of {} elements runs past the end)", source_,
             key, n);
    for (uint64_t i = 0; i < n; ++i) pos = skip_value(elem, pos, key, depth + 1);
    return pos;
  }
  const size_t sz = scalar_size(type);
  GS_CHECK(sz != 0, "{}: '{}' has unknown value type {}", source_, key, static_cast<uint32_t>(type));
  GS_CHECK(sz <= size_ - pos, "{}: truncated GGUF file (value of '{}')", source_, key);
  return pos + sz;
}

GgufMetadata::GgufMetadata(const uint8_t* data, size_t size, std::string source)
    : data_(data), size_(size), source_(std::move(source)) {
  GS_CHECK(size_ >= 4 && std::memcmp(data_, "GGUF", 4) == 0, "{}: not a GGUF file (bad magic)", source_);
  version_ = read<uint32_t>(4, "");
  GS_CHECK(version_ == 2 || version_ == 3, "{}: GGUF version {} is not supported (2 and 3 are)", source_, version_);
  read<uint64_t>(8, "");  // tensor count: not needed here
  const auto n_kv = read<uint64_t>(16, "");
  size_t pos = 24;
  GS_CHECK(n_kv <= (size_ - pos) / 12, "{}: truncated GGUF file ({} metadata entries cannot fit)", source_, n_kv);
  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string_view key_view;
    pos = read_string(pos, &key_view, fmt::format("metadata entry {}", i));
    std::string key(key_view);
    Entry e{};
    e.type = static_cast<Type>(read<uint32_t>(pos, key));
    pos += 4;
    if (e.type == Type::kArray) {
      e.elem_type = static_cast<Type>(read<uint32_t>(pos, key));
      e.count = read<uint64_t>(pos + 4, key);
      e.offset = pos + 12;
    } else {
      e.offset = pos;
    }
    pos = skip_value(e.type, pos, key, 0);
    GS_CHECK(entries_.emplace(key, e).second, "{}: metadata key '{}' appears twice", source_, key);
  }
}

std::vector<std::string> GgufMetadata::keys() const {
  std::vector<std::string> k;
  for (const auto& [name, e] : entries_) k.push_back(name);
  return k;
}

const GgufMetadata::Entry& GgufMetadata::entry(const std::string& key) const {
  auto it = entries_.find(key);
  GS_CHECK(it != entries_.end(), "{}: missing GGUF metadata '{}'", source_, key);
  return it->second;
}

int64_t GgufMetadata::read_int(Type t, size_t pos, const std::string& key) const {
  switch (t) {
    case Type::kU8: return read<uint8_t>(pos, key);
    case Type::kI8: return read<int8_t>(pos, key);
    case Type::kU16: return read<uint16_t>(pos, key);
    case Type::kI16: return read<int16_t>(pos, key);
    case Type::kU32: return read<uint32_t>(pos, key);
    case Type::kI32: return read<int32_t>(pos, key);
    case Type::kU64: {
      const auto v = read<uint64_t>(pos, key);
      GS_CHECK(v <= static_cast<uint64_t>(INT64_MAX), "{}: '{}' is too large", source_, key);
      return static_cast<int64_t>(v);
    }
    case Type::kI64: return read<int64_t>(pos, key);
    default: throw Error("{}: '{}' must be an integer, found {}", source_, key, type_name(t));
  }
}

std::string GgufMetadata::get_string(const std::string& key) const {
  const Entry& e = entry(key);
  GS_CHECK(e.type == Type::kString, "{}: '{}' must be a string, found {}", source_, key, type_name(e.type));
  std::string_view s;
  read_string(e.offset, &s, key);
  return std::string(s);
}

int64_t GgufMetadata::get_int(const std::string& key) const {
  const Entry& e = entry(key);
  return read_int(e.type, e.offset, key);
}

bool GgufMetadata::get_bool(const std::string& key) const {
  const Entry& e = entry(key);
  GS_CHECK(e.type == Type::kBool, "{}: '{}' must be a bool, found {}", source_, key, type_name(e.type));
  return read<uint8_t>(e.offset, key) != 0;
}

std::vector<std::string> GgufMetadata::get_string_array(const std::string& key) const {
  const Entry& e = entry(key);
  GS_CHECK(e.type == Type::kArray && e.elem_type == Type::kString, "{}: '{}' must be an array of strings", source_, key);
  std::vector<std::string> out;
  out.reserve(static_cast<size_t>(e.count));
  size_t pos = e.offset;
  for (uint64_t i = 0; i < e.count; ++i) {
    std::string_view s;
    pos = read_string(pos, &s, key);
    out.emplace_back(s);
  }
  return out;
}

std::vector<int64_t> GgufMetadata::get_int_array(const std::string& key) const {
  const Entry& e = entry(key);
  GS_CHECK(e.type == Type::kArray && is_int(e.elem_type), "{}: '{}' must be an array of integers", source_, key);
  std::vector<int64_t> out(static_cast<size_t>(e.count));
  const size_t sz = scalar_size(e.elem_type);
  for (size_t i = 0; i < out.size(); ++i) out[i] = read_int(e.elem_type, e.offset + i * sz, key);
  return out;
}

std::vector<float> GgufMetadata::get_f32_array(const std::string& key) const {
  const Entry& e = entry(key);
  GS_CHECK(e.type == Type::kArray && e.elem_type == Type::kF32, "{}: '{}' must be an array of f32", source_, key);
  std::vector<float> out(static_cast<size_t>(e.count));
  for (size_t i = 0; i < out.size(); ++i) out[i] = read<float>(e.offset + i * 4, key);
  return out;
}

}  // namespace gs
