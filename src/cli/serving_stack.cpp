#include "cli/serving_stack.h"

#include <chrono>
#include <filesystem>

#include "api/replica_router.h"
#include "cli/kernel_policy_option.h"
#include "core/error.h"
#include "core/read_file.h"
#include "core/log.h"
#include "kernels/backends.h"
#include "model/demo_model.h"
#include "model/model_source.h"

namespace gs::cli {

namespace fs = std::filesystem;

namespace {

bool has_tokenizer(const std::string& dir) {
  return fs::exists(fs::path(dir) / "tokenizer.json") || (fs::path(dir).extension() == ".json" && fs::exists(dir)) ||
         (fs::path(dir).extension() == ".gguf" && fs::exists(dir));
}

// --chat-template FILE: the template source; its special tokens are the tokenizer's.
std::string read_template_file(const std::string& path) {
  std::string source = read_file(path);
  GS_CHECK(!source.empty(), "--chat-template {}: the file is empty", path);
  return source;
}

std::string token_or(const Tokenizer& tok, int id, const char* fallback) {
  return id >= 0 && id < tok.vocab_size() ? std::string(tok.token_text(id)) : std::string(fallback);
}

std::string parameters(const ModelConfig& cfg) {
  double n = static_cast<double>(cfg.parameter_count());
  return n >= 1e9 ? fmt::format("{:.2f} B", n / 1e9) : fmt::format("{:.2f} M", n / 1e6);
}

}  // namespace

ServingStack::~ServingStack() {
  stop();
}

void ServingStack::stop() {
  if (engine_) engine_->stop();
  for (Replica& r : replicas_)
    if (r.engine) r.engine->stop();
}

namespace {
// Replica r's backend: cuda:r for --backend cuda (or cuda:N + r), the same cpu backend kind on cpu.
std::string replica_backend_name(const std::string& backend, int r) {
  if (backend == "cpu") return backend;
  if (backend == "cuda") return "cuda:" + std::to_string(r);
  if (backend.rfind("cuda:", 0) == 0) return "cuda:" + std::to_string(std::stoi(backend.substr(5)) + r);
  throw Error("--data-parallel-size runs on --backend cpu or cuda, not {}", backend);
}
}  // namespace

std::unique_ptr<ServingStack> ServingStack::load(const StackOptions& o) {
  ModelSpec spec{o.model, parse_load_format(o.load_format), o.engine.seed};
  spec.enable_multimodal = o.engine.enable_multimodal;
  std::unique_ptr<ServingStack> s(new ServingStack());
  const std::string model_arg = spec.label();

  s->backend_name_ = !o.backend.empty() ? o.backend : (cuda_available() ? "cuda" : "cpu");
  GS_CHECK(o.tensor_parallel_size >= 1, "--tensor-parallel-size must be at least 1 (got {})", o.tensor_parallel_size);
  const bool tensor_parallel = o.tensor_parallel_size > 1;
  GS_CHECK(!tensor_parallel || o.speculative_model.empty(),
           "--speculative-model does not run with --tensor-parallel-size > 1 yet");
  GS_CHECK(!tensor_parallel || !o.engine.enable_multimodal,
           "--enable-multimodal does not run with --tensor-parallel-size > 1 yet");
  GS_CHECK(o.data_parallel_size >= 1, "--data-parallel-size must be at least 1 (got {})", o.data_parallel_size);
  const bool data_parallel = o.data_parallel_size > 1;

  auto t0 = std::chrono::steady_clock::now();
  LoadedModel loaded;
  GpuCollectiveOptions collectives;
  collectives.custom_all_reduce = !o.disable_custom_all_reduce;
  if (tensor_parallel) {
    // Every rank loads its shard on its own thread and device; the engine drives rank 0, whose
    // runner runs each step on every rank (runner/model_runner.h).
    s->tp_ = std::make_shared<TensorParallelModel>(spec, s->backend_name_, o.tensor_parallel_size,
                                                   backend_options(o.kernel_policy), collectives);
    loaded.config = s->tp_->config();
    loaded.dir = s->tp_->dir();
    loaded.generation = s->tp_->generation();
  } else {
    s->backend_ = create_backend(s->backend_name_, backend_options(o.kernel_policy));
    loaded = load_model(spec, *s->backend_);
  }
  const ModelConfig& cfg = loaded.config;
  const std::string& dir = loaded.dir;
  if (spec.format == LoadFormat::Dummy) {
    log::info("model: {} with dummy (random) weights, {} parameters", model_arg, parameters(cfg));
  } else {
    log::info("model: {} ({}), {} parameters, loaded in {:.1f} s", dir, cfg.architecture, parameters(cfg),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  GS_CHECK(!cfg.is_assistant, "--model {}: an MTP assistant (drafter) cannot be served on its own", model_arg);

  std::string tok_path = o.tokenizer;
  if (tok_path.empty()) {
    if (!dir.empty() && has_tokenizer(dir)) {
      tok_path = dir;
    } else {
      tok_path = ensure_demo_checkpoint();
      log::warn("no tokenizer for {}: using the demo tokenizer (text is meaningless, token counts are exact)", model_arg);
    }
  }
  auto tokenizer = Tokenizer::load(tok_path);
  // Prompt ids index the embedding table: a tokenizer larger than the model's vocabulary would
  // read past it. (Smaller is fine: the demo tokenizer with a preset's dummy weights.)
  GS_CHECK(tokenizer->vocab_size() <= cfg.vocab_size,
           "--tokenizer {}: {} token ids, more than the vocabulary of {} ({} ids)", tok_path, tokenizer->vocab_size(),
           model_arg, cfg.vocab_size);
  std::shared_ptr<const ChatTemplate> tmpl;
  if (!o.chat_template.empty()) {
    tmpl = std::make_shared<ChatTemplate>(read_template_file(o.chat_template), token_or(*tokenizer, tokenizer->bos_id(), "<bos>"),
                                          token_or(*tokenizer, tokenizer->eos_id(), "<eos>"));
    log::info("chat template: {}", o.chat_template);
  } else {
    std::string tmpl_dir = fs::is_directory(tok_path) ? tok_path : fs::path(tok_path).parent_path().string();
    try {
      tmpl = std::make_shared<ChatTemplate>(ChatTemplate::from_model_dir(tmpl_dir));
    } catch (const Error& e) {
      log::warn("no chat template ({}): /v1/chat/completions is disabled, /v1/completions works; --chat-template "
                "FILE gives one", e.what());
    }
  }

  std::string name = o.served_model_name;
  if (name.empty()) name = dir.empty() || spec.is_demo() ? model_arg : fs::path(dir).lexically_normal().filename().string();
  if (name.empty()) name = fs::path(dir).lexically_normal().parent_path().filename().string();

  if (tensor_parallel) s->model_ = std::shared_ptr<Gemma4Model>(s->tp_, &s->tp_->model(0));
  else s->model_ = std::make_shared<Gemma4Model>(cfg, std::move(loaded.weights), *s->backend_);
  EngineOptions engine = o.engine;
  // The assistant on a replica's backend, drafting over that replica's target (its cache binding).
  auto load_drafter = [&](Backend& backend, Gemma4Model& target) {
    // Dummy weights of the assistant from another seed than the target's.
    LoadedModel a = load_model(ModelSpec{o.speculative_model, spec.format, spec.dummy_seed + 1}, backend);
    GS_CHECK(a.config.is_assistant, "--speculative-model {}: {} is not an MTP assistant (Gemma4AssistantForCausalLM)",
             o.speculative_model, a.config.architecture);
    a.config.bind_assistant_to(cfg);
    return std::make_shared<Gemma4Drafter>(a.config, std::move(a.weights), target, backend,
                                           parse_draft_convention(o.speculative_convention));
  };
  if (!o.speculative_model.empty()) {
    s->drafter_ = load_drafter(*s->backend_, *s->model_);
    engine.speculative.drafter = s->drafter_;
    engine.speculative.num_speculative_tokens = o.num_speculative_tokens;
    GS_CHECK(o.speculative_accept_rate <= 0 || spec.format == LoadFormat::Dummy,
             "--speculative-accept-rate makes outputs meaningless: it is for benchmarks with --load-format dummy");
    engine.speculative.forced_accept_rate = o.speculative_accept_rate;
    engine.speculative.disable_by_batch_size = o.speculative_disable_by_batch_size;
    log::info("speculative decoding: {} drafts {} tokens a round for {} ({} convention)", o.speculative_model,
              o.num_speculative_tokens, model_arg, o.speculative_convention);
    // Verify rows run other kernel shapes than one-row decode steps; only batch-invariant kernels
    // make their bf16 results, and so greedy output at near-ties, the same as without drafts.
    if (s->backend_name_.rfind("cuda", 0) == 0 && !backend_options(o.kernel_policy).kernels.batch_invariant)
      log::info("speculative decoding: greedy output equals output without drafts up to bf16 rounding of verify "
                "rows (near-ties can part); --enable-deterministic-inference makes it token for token");
  }
  s->engine_ = std::make_unique<Engine>(s->model_, engine);
  if (data_parallel) {
    std::vector<Engine*> engines = {s->engine_.get()};
    for (int r = 1; r < o.data_parallel_size; ++r) {
      Replica rep;
      if (tensor_parallel) {
        // Replica r is a TP group of its own on the next tensor_parallel_size devices.
        rep.tp = std::make_shared<TensorParallelModel>(spec, s->backend_name_, o.tensor_parallel_size,
                                                       backend_options(o.kernel_policy), collectives,
                                                       r * o.tensor_parallel_size);
        rep.model = std::shared_ptr<Gemma4Model>(rep.tp, &rep.tp->model(0));
      } else {
        rep.backend = create_backend(replica_backend_name(s->backend_name_, r), backend_options(o.kernel_policy));
        LoadedModel l = load_model(spec, *rep.backend);
        rep.model = std::make_shared<Gemma4Model>(l.config, std::move(l.weights), *rep.backend);
      }
      EngineOptions rep_engine = engine;
      if (!o.speculative_model.empty()) {
        rep.drafter = load_drafter(*rep.backend, *rep.model);
        rep_engine.speculative.drafter = rep.drafter;
      }
      rep.engine = std::make_unique<Engine>(rep.model, rep_engine);
      engines.push_back(rep.engine.get());
      s->replicas_.push_back(std::move(rep));
    }
    s->client_ = std::make_unique<api::ReplicaRouter>(engines, engine.page_size);
    const int devices = o.data_parallel_size * o.tensor_parallel_size;
    log::info("data parallel: {} replicas ({}), requests routed by prefix, then load", o.data_parallel_size,
              s->backend_name_ == "cpu" ? "cpu"
              : tensor_parallel
                  ? fmt::format("each {} GPUs: cuda:0..{}", o.tensor_parallel_size, devices - 1)
                  : fmt::format("{} to cuda:{}", s->backend_->name(), o.data_parallel_size - 1));
  } else {
    s->client_ = std::make_unique<api::EngineClientFor>(*s->engine_);
  }
  s->serving_ = std::make_shared<api::ServingModel>(name, tokenizer, tmpl, loaded.generation);
  s->serving_->multimodal = o.multimodal;
  s->serving_->multimodal.enabled = o.engine.enable_multimodal;
  if (o.engine.enable_multimodal) {
    GS_CHECK(s->serving_->image_tokens.complete(), "--enable-multimodal: the tokenizer {} has no image tokens "
             "(<|image|>, <|image>, <image|>)", tok_path);
    log::info("image input: on, up to {} images a request, {} soft tokens an image by default",
              o.multimodal.max_images_per_prompt, o.multimodal.default_budget);
  }
  log::info("backend: {}", tensor_parallel ? s->tp_->describe() : s->backend_->name());  // the engine logs its memory plan itself
  s->engine_->start();
  for (Replica& r : s->replicas_) r.engine->start();
  return s;
}

}  // namespace gs::cli
