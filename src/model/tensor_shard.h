// Host-side slicing of checkpoint tensors for tensor parallelism (weight_loader.cpp).
#pragma once
#include <string>
#include <vector>

#include "core/tensor.h"

namespace gs {

// A slice [start, start + len) along dimension `dim` of the checkpoint tensor `name` (whose full
// shape is `shape`); len < 0 means the whole dimension.
struct TensorPart {
  std::string name;
  Shape shape;
  int dim = 0;
  int64_t start = 0, len = -1;
};

// The slice as a host tensor: `t` itself when it is the whole tensor, else a copy.
Tensor cut_host(const Tensor& t, int dim, int64_t start, int64_t len);
// Host tensors of one dtype, equal in every dimension but `dim`, joined along it.
Tensor concat_host(const std::vector<Tensor>& parts, int dim);

}  // namespace gs
