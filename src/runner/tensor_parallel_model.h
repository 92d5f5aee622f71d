// One model split over N ranks (tensor parallelism, docs/scale-out.md): one process, one thread
// per rank (parallel/rank_workers.h), each rank with its own backend (cpu, or cuda:r), its shard
// of the weights (model/tensor_parallel.h), its communicator and later its KV cache and graphs.
// Every step runs the same forward on every rank; rank 0's gathered logits are the model's.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "checkpoint/generation_config.h"
#include "kernels/backends.h"
#include "model/gemma4_model.h"
#include "model/rank_group.h"
#include "model/model_source.h"
#include "parallel/communicators.h"
#include "parallel/rank_workers.h"
#include "runner/sequence_runner.h"

namespace gs {

class TensorParallelModel final : public RankGroup {
 public:
  // backend: "cpu" (every rank a cpu backend) or "cuda" (rank r on cuda:first_device + r; a
  // data-parallel replica of TP groups starts past the previous group's devices). Loads each
  // rank's shard on its own thread. Throws gs::Error naming the failing rank.
  TensorParallelModel(const ModelSpec& spec, const std::string& backend, int size, const BackendOptions& options = {},
                      const GpuCollectiveOptions& collectives = {}, int first_device = 0);
  ~TensorParallelModel() override;

  const ModelConfig& config() const { return full_; }  // the whole model's
  const GenerationConfig& generation() const { return generation_; }
  const std::string& dir() const { return dir_; }
  Gemma4Model& model(int rank) { return *ranks_[size_t(rank)].model; }
  Backend& backend(int rank) { return *ranks_[size_t(rank)].backend; }
  Communicator* communicator(int rank) { return comms_.empty() ? nullptr : comms_[size_t(rank)].get(); }
  std::string describe() const;  // "2 ranks on cuda:0..1 over nccl+custom"

  // fn(rank) on every rank's thread at once (the rank's device current); returns when all are
  // done, or throws the first failure after aborting the group.
  void run(const std::function<void(int rank)>& fn) { workers_->run(fn); }

  // RankGroup (rank 0's model points here).
  int size() const override { return int(ranks_.size()); }
  Gemma4Model& rank_model(int rank) override { return model(rank); }
  // A step of serving: past GS_TP_STEP_TIMEOUT_S (default 300 s; 0: never) the process stops with
  // where every rank is (RankWorkers). Loading and other long jobs go through run(), without one.
  void run_on_ranks(const std::function<void(int rank)>& fn) override { workers_->run(fn, step_timeout_s_); }

 private:
  struct Rank {
    std::unique_ptr<Backend> backend;
    std::unique_ptr<Gemma4Model> model;
  };
  ModelConfig full_;
  GenerationConfig generation_;
  std::string dir_;
  std::vector<Rank> ranks_;
  std::vector<std::unique_ptr<Communicator>> comms_;
  std::unique_ptr<RankWorkers> workers_;
  int step_timeout_s_ = 300;
};

// sequence_logits and greedy_continuation (sequence_runner.h) run on every rank; rank 0's result.
std::vector<float> sequence_logits(TensorParallelModel& model, const std::vector<int>& tokens,
                                   const SequenceRunOptions& opt);
std::vector<int> greedy_continuation(TensorParallelModel& model, const std::vector<int>& prompt, int new_tokens,
                                     const SequenceRunOptions& opt);

}  // namespace gs
