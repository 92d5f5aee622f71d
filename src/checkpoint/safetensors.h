// Reading .safetensors files: an 8-byte little-endian header length N, N bytes of JSON naming
// every tensor (dtype, shape, byte range inside the data section), then the data section.
// The header is untrusted input: every field is validated and every failure is a gs::Error that
// names the file and, where there is one, the tensor.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/mapped_file.h"

namespace gs {

struct SafetensorsTensor {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  size_t offset = 0;  // from the start of the file (already past the header)
  size_t nbytes = 0;
};

struct SafetensorsHeader {
  std::map<std::string, std::string> metadata;  // "__metadata__" (string -> string)
  std::vector<SafetensorsTensor> tensors;       // sorted by offset
  size_t data_start = 0;                        // 8 + header length
};

// Largest header we accept: the format's own limit (100 MB).
constexpr size_t kMaxSafetensorsHeader = 100u << 20;

// Parses and validates the header of a safetensors image of `size` bytes at `bytes` (the whole
// file, so that data ranges can be checked against it). `label` names the file in errors.
// Safe on any input: never reads outside [bytes, bytes + size).
SafetensorsHeader parse_safetensors(const uint8_t* bytes, size_t size, const std::string& label);

// A memory-mapped safetensors file with its parsed header.
class SafetensorsFile {
 public:
  explicit SafetensorsFile(const std::string& path);  // maps and parses; throws gs::Error

  const std::string& path() const { return file_.path(); }
  const SafetensorsHeader& header() const { return header_; }
  const std::vector<SafetensorsTensor>& tensors() const { return header_.tensors; }
  const SafetensorsTensor* find(const std::string& name) const;  // null when absent
  const uint8_t* data(const SafetensorsTensor& t) const { return file_.data() + t.offset; }
  size_t file_size() const { return file_.size(); }

 private:
  MappedFile file_;
  SafetensorsHeader header_;
  std::map<std::string, size_t> by_name_;
};

// "[3, 4]" for error messages.
std::string shape_str(const std::vector<int64_t>& shape);

}  // namespace gs
