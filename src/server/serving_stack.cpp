#include "server/serving_stack.h"

#include <chrono>
#include <filesystem>

#include "checkpoint/checkpoint.h"
#include "core/error.h"
#include "core/read_file.h"
#include "core/log.h"
#include "kernels/backends.h"
#include "model/demo_model.h"
#include "model/dummy_weights.h"
#include "model/presets.h"
#include "model/weight_loader.h"

namespace gs::server {

namespace fs = std::filesystem;

namespace {

bool has_tokenizer(const std::string& dir) {
  return fs::exists(fs::path(dir) / "tokenizer.json") || (fs::path(dir).extension() == ".json" && fs::exists(dir)) ||
         (fs::path(dir).extension() == ".gguf" && fs::exists(dir));
}

// generation_config.json defaults for a dummy-weight model: the preset's, or the directory's.
GenerationConfig dummy_generation_config(const std::string& model) {
  if (is_preset(model)) {
    return GenerationConfig::from_json(preset_generation_config_json(model), preset_config_json(model), "preset " + model);
  }
  fs::path gen = fs::path(model) / "generation_config.json";
  nlohmann::json g = fs::exists(gen) ? read_json_file(gen.string()) : nlohmann::json();
  return GenerationConfig::from_json(g, read_json_file((fs::path(model) / "config.json").string()), gen.string());
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
  if (engine_) engine_->stop();
}

std::unique_ptr<ServingStack> ServingStack::load(const StackOptions& o) {
  GS_CHECK(o.load_format == "auto" || o.load_format == "dummy", "--load-format '{}' is not one of auto, dummy",
           o.load_format);
  std::unique_ptr<ServingStack> s(new ServingStack());
  const bool demo = names_demo_model(o.model);
  std::string model_arg = demo ? "demo" : o.model;

  s->backend_name_ = !o.backend.empty() ? o.backend : (cuda_available() ? "cuda" : "cpu");
  s->backend_ = create_backend(s->backend_name_);

  auto t0 = std::chrono::steady_clock::now();
  ModelConfig cfg;
  ModelWeights weights;
  GenerationConfig gen;
  std::string dir;  // checkpoint directory, when there is one
  if (o.load_format == "dummy") {
    cfg = resolve_dummy_config(model_arg);
    weights = make_dummy_weights(cfg, *s->backend_, o.engine.seed);
    gen = dummy_generation_config(model_arg);
    if (!is_preset(model_arg)) dir = model_arg;
    log::info("model: {} with dummy (random) weights, {} parameters", model_arg, parameters(cfg));
  } else {
    GS_CHECK(demo || !is_preset(model_arg) || fs::is_directory(model_arg),
             "--model {}: a preset has no weights on disk; add --load-format dummy for random weights", model_arg);
    dir = checkpoint_dir_or_demo(o.model);
    auto ckpt = Checkpoint::open(dir);
    cfg = ModelConfig::from_json(ckpt->config_json());
    weights = load_weights(*ckpt, cfg, *s->backend_);
    gen = ckpt->generation_config();
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
  if (name.empty()) name = dir.empty() || demo ? model_arg : fs::path(dir).lexically_normal().filename().string();
  if (name.empty()) name = fs::path(dir).lexically_normal().parent_path().filename().string();

  s->model_ = std::make_shared<Gemma4Model>(cfg, std::move(weights), *s->backend_);
  s->engine_ = std::make_unique<Engine>(s->model_, o.engine);
  s->client_ = std::make_unique<api::EngineClientFor>(*s->engine_);
  s->serving_ = std::make_shared<api::ServingModel>(name, tokenizer, tmpl, gen);
  log::info("backend: {}", s->backend_->name());  // the engine logs its memory plan itself
  s->engine_->start();
  return s;
}

}  // namespace gs::server
