#include "core/npy.h"

#include <climits>
#include <cstring>
#include <fstream>
#include <iterator>

#include "core/error.h"

namespace gs {

int64_t NpyArray::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

namespace {

// The value text of `key` in the header dict, e.g. "'<f4'" or "(3, 4)".
std::string header_value(const std::string& header, const std::string& key, const std::string& name) {
  const std::string k = "'" + key + "':";
  size_t p = header.find(k);
  GS_CHECK(p != std::string::npos, "{}: .npy header has no '{}' ({})", name, key, header);
  p += k.size();
  while (p < header.size() && header[p] == ' ') ++p;
  size_t end = p;
  if (p < header.size() && header[p] == '(') {
    end = header.find(')', p);
    GS_CHECK(end != std::string::npos, "{}: unterminated shape in .npy header", name);
    ++end;
  } else {
    while (end < header.size() && header[end] != ',' && header[end] != '}') ++end;
  }
  return header.substr(p, end - p);
}

}  // namespace

NpyArray parse_npy(const uint8_t* bytes, size_t size, const std::string& name) {
  static const char magic[] = "\x93NUMPY";
  GS_CHECK(size >= 10 && std::memcmp(bytes, magic, 6) == 0, "{}: not a .npy file (bad magic)", name);
  const int major = bytes[6];
  size_t header_len, offset;
  if (major == 1) {
    header_len = size_t(bytes[8]) | size_t(bytes[9]) << 8;
    offset = 10;
  } else {
    GS_CHECK(major == 2 || major == 3, "{}: unsupported .npy version {}", name, major);
    GS_CHECK(size >= 12, "{}: truncated .npy header", name);
    header_len = size_t(bytes[8]) | size_t(bytes[9]) << 8 | size_t(bytes[10]) << 16 | size_t(bytes[11]) << 24;
    offset = 12;
  }
  GS_CHECK(offset + header_len <= size, "{}: truncated .npy header ({} bytes announced)", name, header_len);
  const std::string header(reinterpret_cast<const char*>(bytes + offset), header_len);

  NpyArray a;
  const std::string descr = header_value(header, "descr", name);
  if (descr == "'<f4'") a.dtype = DType::F32;
  else if (descr == "'<i4'") a.dtype = DType::I32;
  else if (descr == "'<i8'") a.dtype = DType::I64;
  else if (descr == "'|u1'") a.dtype = DType::U8;  // image pixels (fixtures/vision_golden)
  else throw Error("{}: unsupported .npy dtype {} (expected '<f4', '<i4', '<i8' or '|u1')", name, descr);
  GS_CHECK(header_value(header, "fortran_order", name) == "False", "{}: Fortran-ordered .npy is not supported", name);
  const std::string shape = header_value(header, "shape", name);
  for (size_t p = 1; p < shape.size();) {
    while (p < shape.size() && (shape[p] == ' ' || shape[p] == ',')) ++p;
    if (p >= shape.size() || shape[p] == ')') break;
    size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(shape.substr(p), &used);
    } catch (const std::exception&) {
      throw Error("{}: bad shape {} in .npy header", name, shape);
    }
    GS_CHECK(v >= 0, "{}: negative dimension in shape {}", name, shape);
    a.shape.push_back(v);
    p += used;
  }
  const size_t payload = size - offset - header_len;
  const size_t want = size_t(a.numel()) * dtype_size(a.dtype);
  GS_CHECK(payload >= want, "{}: truncated .npy data ({} bytes for shape {} need {})", name, payload, shape, want);
  a.data.assign(bytes + offset + header_len, bytes + offset + header_len + want);
  return a;
}

NpyArray read_npy(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  GS_CHECK(f.good(), "cannot open {}", path);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return parse_npy(bytes.data(), bytes.size(), path);
}

void write_npy(const std::string& path, DType dtype, const std::vector<int64_t>& shape, const void* data) {
  const char* descr = dtype == DType::F32 ? "<f4" : dtype == DType::I32 ? "<i4" : dtype == DType::I64 ? "<i8" : nullptr;
  GS_CHECK(descr, "write_npy {}: unsupported dtype {}", path, dtype_name(dtype));
  // Python's tuple syntax: "()", "(3,)", "(3, 4)".
  std::string dims;
  int64_t n = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    dims += (i ? ", " : "") + std::to_string(shape[i]);
    n *= shape[i];
  }
  if (shape.size() == 1) dims += ",";
  std::string header =
      "{'descr': '" + std::string(descr) + "', 'fortran_order': False, 'shape': (" + dims + "), }";
  // Pad with spaces and a newline so the data starts on a 64-byte boundary.
  const size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  std::ofstream f(path, std::ios::binary);
  GS_CHECK(f.good(), "cannot write {}", path);
  const uint8_t pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, uint8_t(header.size() & 0xff), uint8_t(header.size() >> 8)};
  f.write(reinterpret_cast<const char*>(pre), 10);
  f.write(header.data(), std::streamsize(header.size()));
  f.write(static_cast<const char*>(data), std::streamsize(size_t(n) * dtype_size(dtype)));
  GS_CHECK(f.good(), "error writing {}", path);
}

std::vector<int> npy_token_ids(const NpyArray& a, const std::string& name) {
  GS_CHECK(a.shape.size() == 1, "{}: token ids must be a 1-D array, got {} dimensions", name, a.shape.size());
  std::vector<int> ids(size_t(a.numel()));
  for (int64_t i = 0; i < a.numel(); ++i) {
    if (a.dtype == DType::I32) {
      ids[size_t(i)] = a.as<int32_t>()[i];
    } else if (a.dtype == DType::I64) {
      const int64_t v = a.as<int64_t>()[i];
      GS_CHECK(v >= INT_MIN && v <= INT_MAX, "{}: token id {} at index {} does not fit in int32", name, v, i);
      ids[size_t(i)] = int(v);
    } else {
      throw Error("{}: token ids must be integers (int32 or int64), got float32", name);
    }
  }
  return ids;
}

}  // namespace gs
