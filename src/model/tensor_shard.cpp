#include "model/tensor_shard.h"

#include <cstring>

#include "core/error.h"

namespace gs {

namespace {
// Elements before and after dimension `dim` (a tensor is outer × dim × inner).
std::pair<int64_t, int64_t> outer_inner(const Shape& s, int dim) {
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < dim; ++i) outer *= s[i];
  for (int i = dim + 1; i < s.ndim; ++i) inner *= s[i];
  return {outer, inner};
}
}  // namespace

Tensor cut_host(const Tensor& t, int dim, int64_t start, int64_t len) {
  GS_CHECK(dim >= 0 && dim < t.ndim(), "cut {}: no dimension {}", t.str(), dim);
  const int64_t full = t.dim(dim);
  if (len < 0) len = full;
  GS_CHECK(start >= 0 && len > 0 && start + len <= full, "cut {}: [{}, {}) of dimension {}", t.str(), start,
           start + len, dim);
  if (start == 0 && len == full) return t;
  Shape s = t.shape;
  s.d[size_t(dim)] = len;
  Tensor out = host_tensor(t.dtype, s);
  const auto [outer, inner] = outer_inner(t.shape, dim);
  const size_t es = dtype_size(t.dtype), block = size_t(len * inner) * es;
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(out.ptr<char>() + size_t(o) * block, t.ptr<const char>() + size_t((o * full + start) * inner) * es,
                block);
  return out;
}

Tensor concat_host(const std::vector<Tensor>& parts, int dim) {
  GS_CHECK(!parts.empty(), "concat: no parts");
  if (parts.size() == 1) return parts[0];
  Shape s = parts[0].shape;
  int64_t total = 0;
  for (const Tensor& p : parts) {
    GS_CHECK(p.dtype == parts[0].dtype && p.ndim() == s.ndim, "concat: {} does not match {}", p.str(), parts[0].str());
    for (int i = 0; i < s.ndim; ++i)
      GS_CHECK(i == dim || p.dim(i) == s[i], "concat along {}: {} does not match {}", dim, p.str(), parts[0].str());
    total += p.dim(dim);
  }
  s.d[size_t(dim)] = total;
  Tensor out = host_tensor(parts[0].dtype, s);
  const auto [outer, inner] = outer_inner(s, dim);
  const size_t es = dtype_size(out.dtype);
  char* dst = out.ptr<char>();
  for (int64_t o = 0; o < outer; ++o)
    for (const Tensor& p : parts) {
      const size_t block = size_t(p.dim(dim) * inner) * es;
      std::memcpy(dst, p.ptr<const char>() + size_t(o) * block, block);
      dst += block;
    }
  return out;
}

}  // namespace gs
