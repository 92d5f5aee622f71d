// The ranks of a tensor-parallel model as the runner sees them (implemented by
// runner/tensor_parallel_model.h). Rank 0's Gemma4Model points to its group, so whatever is handed
// rank 0 (the engine, its runner) can drive every rank: each step runs on every rank's thread.
#pragma once
#include <functional>

namespace gs {

class Gemma4Model;

class RankGroup {
 public:
  virtual ~RankGroup() = default;
  virtual int size() const = 0;
  virtual Gemma4Model& rank_model(int rank) = 0;
  // fn(rank) on every rank's thread at once; throws the first failure (naming its rank) after
  // stopping the others.
  virtual void run_on_ranks(const std::function<void(int rank)>& fn) = 0;
};

}  // namespace gs
