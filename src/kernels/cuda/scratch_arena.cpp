#include "kernels/cuda/scratch_arena.h"

#include "core/error.h"

namespace gs::cuda {

void* ScratchArena::get(size_t bytes, bool capturing, const char* op) {
  if (bytes <= bytes_) return block_.get();
  if (capturing)
    throw Error("{}: needs {} bytes of scratch but only {} are reserved, and a CUDA graph is being captured; run the "
                "same step once without capture first so the scratch is sized",
                op, bytes, bytes_);
  size_t grown = std::max(bytes, bytes_ + bytes_ / 2);
  // A captured graph may still point into the old block: keep it for the backend's lifetime
  // (growth is geometric, so retired blocks add up to less than the live one).
  if (block_) retired_.push_back(std::move(block_));
  block_ = alloc_->allocate(grown);
  bytes_ = grown;
  return block_.get();
}

}  // namespace gs::cuda
