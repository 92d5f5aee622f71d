// The key/value metadata of a GGUF file (versions 2 and 3), read with every offset and length
// checked against the buffer: a truncated or corrupt file is a gs::Error naming the file and key.
// Tensor descriptions that follow the metadata are not read.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace gs {

class GgufMetadata {
 public:
  enum class Type : uint32_t {
    kU8 = 0, kI8 = 1, kU16 = 2, kI16 = 3, kU32 = 4, kI32 = 5, kF32 = 6, kBool = 7,
    kString = 8, kArray = 9, kU64 = 10, kI64 = 11, kF64 = 12,
  };

  // `data` must outlive this object. `source` names the file in messages.
  GgufMetadata(const uint8_t* data, size_t size, std::string source);

  uint32_t version() const { return version_; }
  bool has(const std::string& key) const { return entries_.count(key) != 0; }
  std::vector<std::string> keys() const;

  std::string get_string(const std::string& key) const;
  int64_t get_int(const std::string& key) const;  // any integer type
  bool get_bool(const std::string& key) const;
  std::vector<std::string> get_string_array(const std::string& key) const;
  std::vector<int64_t> get_int_array(const std::string& key) const;  // any integer element type
  std::vector<float> get_f32_array(const std::string& key) const;

 private:
  struct Entry {
    Type type;
    Type elem_type;   // arrays only
    uint64_t count;   // arrays only
    size_t offset;    // first byte of the value (after the array header for arrays)
  };
  const Entry& entry(const std::string& key) const;
  size_t skip_value(Type type, size_t pos, const std::string& key, int depth) const;
  size_t read_string(size_t pos, std::string_view* out, const std::string& key) const;
  template <typename T>
  T read(size_t pos, const std::string& key) const;
  int64_t read_int(Type t, size_t pos, const std::string& key) const;

  const uint8_t* data_;
  size_t size_;
  std::string source_;
  uint32_t version_ = 0;
  std::map<std::string, Entry> entries_;
};

}  // namespace gs
