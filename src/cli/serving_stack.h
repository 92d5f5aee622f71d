// Everything between a --model argument and a running engine, shared by `gemmaserve serve` and
// `gemmaserve run` (no HTTP here): the backend, the model (a checkpoint directory, the built-in demo, or a preset
// with dummy weights), the engine, the tokenizer, chat template and generation defaults.
#pragma once
#include <memory>
#include <string>

#include "api/engine_client.h"
#include "api/serving_model.h"
#include "engine/engine.h"
#include "model/gemma4_model.h"
#include "ops/backend.h"
#include "runner/tensor_parallel_model.h"

namespace gs::cli {

struct StackOptions {
  std::string model;              // directory or preset; empty: the built-in demo model
  std::string load_format = "auto";  // auto: read the checkpoint; dummy: random weights of its shape
  std::string tokenizer;          // directory, tokenizer.json or .gguf; empty: the model's own, else the demo's
  std::string chat_template;      // a .jinja file; empty: the one beside the tokenizer, if any
  std::string backend;            // cpu | cuda | cuda:N; empty: cuda when available, else cpu
  std::string kernel_policy;      // --kernel-policy items (kernels/kernel_policy_items.h); empty: the defaults
  std::string served_model_name;  // empty: "demo", the preset name or the directory's name
  std::string speculative_model;  // an MTP assistant that drafts for the model; empty: no speculation
  int num_speculative_tokens = 3;
  double speculative_accept_rate = 0;  // benchmarks only (--speculative-accept-rate)
  std::string speculative_convention = "transformers";
  int speculative_disable_by_batch_size = 0;  // > 0: no drafting above this many running requests
  int tensor_parallel_size = 1;   // > 1: the model split over that many ranks (docs/scale-out.md)
  bool disable_custom_all_reduce = false;  // every all-reduce through NCCL
  int data_parallel_size = 1;     // > 1: that many engine replicas behind the endpoint (api/replica_router.h)
  EngineOptions engine;
  api::MultimodalOptions multimodal;  // image input; on with engine.enable_multimodal
};

class ServingStack {
 public:
  // Loads and starts the engine; logs what it loaded. Throws gs::Error with what went wrong.
  static std::unique_ptr<ServingStack> load(const StackOptions& opts);
  ~ServingStack();  // stops the engine

  Engine& engine() { return *engine_; }    // the first replica (the only one without data parallelism)
  api::EngineClient& client() { return *client_; }  // every replica: submit, abort, summed stats
  void stop();                              // stops every replica's engine
  std::shared_ptr<const api::ServingModel> serving_model() const { return serving_; }
  const std::string& backend_name() const { return backend_name_; }

 private:
  ServingStack() = default;
  // Declaration order is teardown order reversed: the engine goes before the model and backend.
  std::unique_ptr<Backend> backend_;
  std::shared_ptr<TensorParallelModel> tp_;  // with --tensor-parallel-size > 1; model_ is its rank 0
  std::shared_ptr<Gemma4Model> model_;
  std::shared_ptr<Gemma4Drafter> drafter_;
  std::unique_ptr<Engine> engine_;
  // --data-parallel-size > 1: replicas 1..N-1 (each its own backend or TP group, model copy,
  // drafter and engine).
  struct Replica {
    std::unique_ptr<Backend> backend;
    std::shared_ptr<TensorParallelModel> tp;  // with --tensor-parallel-size > 1; model is its rank 0
    std::shared_ptr<Gemma4Model> model;
    std::shared_ptr<Gemma4Drafter> drafter;  // with --speculative-model: its own, over its model's cache
    std::unique_ptr<Engine> engine;
  };
  std::vector<Replica> replicas_;
  std::unique_ptr<api::EngineClient> client_;
  std::shared_ptr<api::ServingModel> serving_;
  std::string backend_name_;
};

}  // namespace gs::cli
