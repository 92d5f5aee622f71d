#include "core/tensor.h"

#include <cstdlib>
#include <fmt/format.h>

#include "core/error.h"

namespace gs {

Shape::Shape(std::initializer_list<int64_t> dims) {
  GS_CHECK(dims.size() <= d.size(), "Shape: at most {} dimensions", d.size());
  for (int64_t x : dims) d[ndim++] = x;
}

int64_t Shape::numel() const {
  int64_t n = 1;
  for (int i = 0; i < ndim; ++i) n *= d[i];
  return n;
}

bool Shape::operator==(const Shape& o) const {
  if (ndim != o.ndim) return false;
  for (int i = 0; i < ndim; ++i)
    if (d[i] != o.d[i]) return false;
  return true;
}

std::string Shape::str() const {
  std::string s = "[";
  for (int i = 0; i < ndim; ++i) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + "]";
}

int64_t Tensor::rows() const {
  int64_t n = 1;
  for (int i = 0; i + 1 < shape.ndim; ++i) n *= shape.d[i];
  return n;
}

Tensor Tensor::view(Shape s) const {
  GS_CHECK(s.numel() == numel(), "Tensor::view: {} has {} elements, {} has {}", shape.str(), numel(),
           s.str(), s.numel());
  Tensor t = *this;
  t.shape = s;
  return t;
}

Tensor Tensor::slice(int64_t start, int64_t n) const {
  GS_CHECK(shape.ndim >= 1 && start >= 0 && n >= 0 && start + n <= shape[0],
           "Tensor::slice: rows [{}, {}) of {}", start, start + n, shape.str());
  Tensor t = *this;
  int64_t row = numel() / (shape[0] ? shape[0] : 1);
  t.data = static_cast<char*>(data) + size_t(start * row) * dtype_size(dtype);
  t.shape.d[0] = n;
  return t;
}

std::string Tensor::str() const {
  return fmt::format("{}{}@{}", dtype_name(dtype), shape.str(), device == Device::CPU ? "cpu" : "cuda");
}

Tensor host_tensor(DType dtype, Shape shape) {
  Tensor t;
  t.dtype = dtype;
  t.shape = shape;
  size_t bytes = std::max<size_t>(t.nbytes(), 1);
  void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  GS_CHECK(p != nullptr, "out of host memory allocating {} bytes", bytes);
  t.storage = std::shared_ptr<void>(p, std::free);
  t.data = p;
  return t;
}

Tensor borrow_host(void* data, DType dtype, Shape shape) {
  Tensor t;
  t.data = data;
  t.dtype = dtype;
  t.shape = shape;
  return t;
}

}  // namespace gs
