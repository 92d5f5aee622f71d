// A typed view of contiguous memory on one device. Tensors never own layout tricks: rows are
// contiguous, the last dimension is fastest. Ownership is shared through `storage`, so a view
// (a row slice, a reshape) keeps its memory alive.
#pragma once
#include <array>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>

#include "core/dtype.h"

namespace gs {

enum class Device : uint8_t { CPU, CUDA };

struct Shape {
  std::array<int64_t, 5> d{};
  int ndim = 0;
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims);
  int64_t operator[](int i) const { return d[i < 0 ? ndim + i : i]; }
  int64_t numel() const;
  bool operator==(const Shape& o) const;
  std::string str() const;  // "[3, 4]"
};

struct Tensor {
  std::shared_ptr<void> storage;  // keeps the memory alive; null for a borrowed view
  void* data = nullptr;
  DType dtype = DType::F32;
  Device device = Device::CPU;
  Shape shape;

  bool defined() const { return data != nullptr; }
  int64_t numel() const { return shape.numel(); }
  size_t nbytes() const { return size_t(numel()) * dtype_size(dtype); }
  int64_t dim(int i) const { return shape[i]; }
  int ndim() const { return shape.ndim; }
  int64_t rows() const;  // product of all dimensions but the last
  int64_t cols() const { return shape.ndim ? shape[shape.ndim - 1] : 1; }
  template <typename T>
  T* ptr() const { return static_cast<T*>(data); }

  // Same memory, another shape with the same element count.
  Tensor view(Shape s) const;
  // Rows [start, start+n) along dimension 0.
  Tensor slice(int64_t start, int64_t n) const;
  std::string str() const;  // "bf16[3, 4]@cuda"
};

// Host tensors (for tests, staging and the CPU backend).
Tensor host_tensor(DType dtype, Shape shape);
// Wraps memory owned elsewhere (an mmap, a vector) without copying.
Tensor borrow_host(void* data, DType dtype, Shape shape);

}  // namespace gs
