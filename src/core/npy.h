// NumPy .npy files (format version 1.0-3.0, little-endian, C order): how token ids and logits go
// in and out of `gemmaserve logits` and the golden fixtures.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace gs {

struct NpyArray {
  DType dtype = DType::F32;     // F32, I32, I64 or U8 ('<f4', '<i4', '<i8', '|u1')
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;    // numel · dtype_size bytes
  int64_t numel() const;
  template <typename T>
  const T* as() const { return reinterpret_cast<const T*>(data.data()); }
};

// Throws gs::Error naming the path for a missing file, a bad header, an unsupported dtype or
// byte order, Fortran order, or a truncated payload.
NpyArray read_npy(const std::string& path);
// Parses .npy bytes; `name` is used in error messages.
NpyArray parse_npy(const uint8_t* bytes, size_t size, const std::string& name);

void write_npy(const std::string& path, DType dtype, const std::vector<int64_t>& shape, const void* data);

// Token ids of a 1-D integer array (i32, or i64 within int range) as int.
std::vector<int> npy_token_ids(const NpyArray& a, const std::string& name);

}  // namespace gs
