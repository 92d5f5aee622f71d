#include "runner/tensor_parallel_model.h"

#include <cstdlib>

#include "core/error.h"
#include "core/log.h"
#include "model/dummy_weights.h"
#include "model/tensor_parallel.h"
#include "model/weight_loader.h"
#include "parallel/module_loading.h"

namespace gs {

namespace {

std::string rank_backend_name(const std::string& backend, int device) {
  if (backend == "cpu") return "cpu";
  GS_CHECK(backend == "cuda", "--tensor-parallel-size runs on --backend cpu or cuda (rank r on cuda:r), not {}",
           backend);
  return "cuda:" + std::to_string(device);
}

}  // namespace

TensorParallelModel::TensorParallelModel(const ModelSpec& spec, const std::string& backend, int size,
                                         const BackendOptions& options, const GpuCollectiveOptions& collectives,
                                         int first_device) {
  full_ = resolve_model_config(spec, &dir_);
  check_tensor_parallel(full_, size);
  ranks_.resize(size_t(size));
  if (const char* t = std::getenv("GS_TP_STEP_TIMEOUT_S")) step_timeout_s_ = std::atoi(t);
  if (backend == "cuda" && size > 1) prefer_eager_module_loading();  // why: parallel/module_loading.h
  workers_ = std::make_unique<RankWorkers>(size, [this] {
    for (auto& c : comms_) c->abort();
  });
  // Each backend is made on its rank's thread, which it binds to its device.
  workers_->run([&](int r) {
    ranks_[size_t(r)].backend = create_backend(rank_backend_name(backend, first_device + r), options);
    ranks_[size_t(r)].backend->make_current();
  });
  if (backend == "cuda" && size > 1 && cuda_modules_load_lazily())
    log::warn("tensor parallel: CUDA loads kernels lazily here (CUDA was started before the ranks, or "
              "CUDA_MODULE_LOADING says so); a kernel's first launch can then stall behind a rank's "
              "all-reduce and hang the ranks. Run with CUDA_MODULE_LOADING=EAGER.");
  if (size > 1) {
    std::vector<Backend*> bes;
    for (Rank& r : ranks_) bes.push_back(r.backend.get());
    comms_ = make_communicators(bes, collectives);
  }
  std::shared_ptr<Checkpoint> ckpt;
  if (spec.format == LoadFormat::Auto) {
    ckpt = Checkpoint::open(dir_);
    full_ = ModelConfig::from_json(ckpt->config_json());
    generation_ = ckpt->generation_config();
  } else {
    generation_ = dummy_model_generation_config(spec);
  }
  const ModelConfig shard = shard_config(full_, size);
  workers_->run([&](int r) {
    Backend& be = *ranks_[size_t(r)].backend;
    ModelWeights w;
    if (ckpt) {
      w = load_weights(*ckpt, full_, be, nullptr, TpShard{r, size});
    } else {
      // Dummy weights of the shard's shapes (performance only: not slices of one full model).
      ModelConfig dummy = shard;
      dummy.vocab_size = int(vocab_shard_rows(full_, size));
      w = make_dummy_weights(dummy, be, spec.dummy_seed + uint64_t(r));
    }
    ranks_[size_t(r)].model = std::make_unique<Gemma4Model>(shard, std::move(w), be, communicator(r));
  });
  if (size > 1) ranks_[0].model->set_rank_group(this);
  log::info("tensor parallel: {}", describe());
}

TensorParallelModel::~TensorParallelModel() {
  // Models and communicators hold device memory of their rank: release them on its thread.
  if (!workers_) return;
  try {
    workers_->run([&](int r) {
      ranks_[size_t(r)].model.reset();
      if (!comms_.empty()) comms_[size_t(r)].reset();
      ranks_[size_t(r)].backend.reset();
    });
  } catch (const std::exception& e) {
    log::warn("tensor parallel shutdown: {}", e.what());
  }
  workers_.reset();
}

std::string TensorParallelModel::describe() const {
  const std::string dev = ranks_.empty() || !ranks_[0].backend ? "?" : ranks_[0].backend->name();
  return fmt::format("{} ranks (rank 0 on {}) over {}", size(), dev, comms_.empty() ? "none" : comms_[0]->name());
}

std::vector<float> sequence_logits(TensorParallelModel& model, const std::vector<int>& tokens,
                                   const SequenceRunOptions& opt) {
  std::vector<float> out;
  model.run([&](int r) {
    std::vector<float> l = sequence_logits(model.model(r), tokens, opt);
    if (r == 0) out = std::move(l);
  });
  return out;
}

std::vector<int> greedy_continuation(TensorParallelModel& model, const std::vector<int>& prompt, int new_tokens,
                                     const SequenceRunOptions& opt) {
  std::vector<int> out;
  model.run([&](int r) {
    std::vector<int> g = greedy_continuation(model.model(r), prompt, new_tokens, opt);
    if (r == 0) out = std::move(g);
  });
  return out;
}

}  // namespace gs
