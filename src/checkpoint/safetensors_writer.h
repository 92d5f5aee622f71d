// Writing .safetensors files (random checkpoints, tests). Tensors are declared up front so the
// header can be written first; their bytes are then produced one tensor at a time by a callback,
// so a file of tens of GB never has to exist in memory.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace gs {

struct TensorDecl {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  size_t nbytes() const;
};

// Fills `dst` (decl.nbytes() bytes) with the tensor's contents. Not called for zero-byte tensors.
using TensorFiller = std::function<void(const TensorDecl& decl, uint8_t* dst)>;

// Writes one safetensors file holding `tensors` in the given order. The header JSON is padded
// with spaces to a multiple of 8 bytes (as the reference writer does), so the data section is
// aligned. Throws gs::Error naming the path on I/O failure.
void write_safetensors(const std::string& path, const std::vector<TensorDecl>& tensors, const TensorFiller& fill,
                       const std::map<std::string, std::string>& metadata = {{"format", "pt"}});

// The header bytes (length prefix included) write_safetensors would emit: for tests that build
// deliberately broken files.
std::string safetensors_header_bytes(const std::vector<TensorDecl>& tensors,
                                     const std::map<std::string, std::string>& metadata = {{"format", "pt"}});

// Splits tensors (in order) into shards of at most max_shard_bytes each (a tensor larger than the
// limit gets a shard of its own) and writes them into `dir` as model.safetensors, or as
// model-0000i-of-0000n.safetensors plus model.safetensors.index.json when more than one shard is
// needed. Returns the file names written.
std::vector<std::string> write_sharded_safetensors(const std::string& dir, const std::vector<TensorDecl>& tensors,
                                                   const TensorFiller& fill, size_t max_shard_bytes);

}  // namespace gs
