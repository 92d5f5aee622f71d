// gemmaserve inspect: the structure of a model as the engine derives it from config.json alone
// (per-layer table, parameters, KV bytes per token of each cache group, weight bytes, what a
// text-only load skips).
#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <memory>

#include "checkpoint/checkpoint.h"
#include "cli/command.h"
#include "core/error.h"
#include "core/log.h"
#include "model/dummy_weights.h"
#include "model/model_source.h"
#include "model/presets.h"

namespace gs::cli {
namespace {

using nlohmann::json;

struct InspectOptions {
  std::string model;
  std::string target;
  bool json = false;
};

bool has_weights(const std::string& dir) {
  struct stat st {};
  return ::stat((dir + "/model.safetensors").c_str(), &st) == 0 ||
         ::stat((dir + "/model.safetensors.index.json").c_str(), &st) == 0;
}

json layer_json(const LayerSpec& l, int i) {
  return {{"index", i},
          {"type", l.type == LayerType::Full ? "full" : "sliding"},
          {"head_dim", l.head_dim},
          {"kv_heads", l.num_kv_heads},
          {"k_eq_v", l.k_eq_v},
          {"intermediate", l.intermediate},
          {"sliding_window", l.sliding_window},
          {"owns_kv", l.owns_kv},
          {"kv_source", l.kv_source},
          {"kv_slot", l.kv_slot},
          {"rope", {{"theta", l.rope.theta}, {"rotary_pairs", l.rope.rotary_pairs}, {"freq_dim", l.rope.freq_dim}}}};
}

int run(const InspectOptions& o) {
  // Like run and serve: no --model (or "demo") is the built-in demo model's checkpoint.
  const std::string model = model_location(ModelSpec{o.model});
  ModelConfig cfg = resolve_dummy_config(model);
  std::unique_ptr<Checkpoint> ckpt;
  if (!is_preset(model) && has_weights(model)) {
    spdlog::level::level_enum lvl = spdlog::get_level();
    spdlog::set_level(spdlog::level::warn);  // the table says what the load log would
    ckpt = Checkpoint::open(model);
    spdlog::set_level(lvl);
  }
  std::string target = o.target.empty() && is_preset(model) ? preset_target(model) : o.target;
  if (cfg.is_assistant && !target.empty()) cfg.bind_assistant_to(resolve_dummy_config(target));

  const size_t bf16 = 2;
  const size_t weight_bytes = ckpt ? ckpt->loaded_bytes() : size_t(cfg.parameter_count()) * bf16;
  const size_t kv_s = cfg.kv_bytes_per_token(KvGroup::Sliding, bf16), kv_f = cfg.kv_bytes_per_token(KvGroup::Full, bf16);
  if (o.json) {
    json j = {{"architecture", cfg.architecture},
              {"weight_prefix", cfg.weight_prefix},
              {"assistant", cfg.is_assistant},
              {"hidden_size", cfg.hidden_size},
              {"num_layers", cfg.num_layers},
              {"num_attention_heads", cfg.num_q_heads},
              {"vocab_size", cfg.vocab_size},
              {"sliding_window", cfg.sliding_window},
              {"final_logit_softcap", cfg.final_logit_softcap},
              {"ple_dim", cfg.ple_dim},
              {"num_kv_shared_layers", cfg.num_kv_shared_layers},
              {"moe", cfg.moe ? json{{"experts", cfg.num_experts}, {"top_k", cfg.top_k_experts},
                                     {"intermediate", cfg.moe_intermediate_size}}
                              : json(nullptr)},
              {"eos_token_ids", cfg.eos_token_ids},
              {"parameters", cfg.parameter_count()},
              {"weights_bytes", weight_bytes},
              {"weights_from", ckpt ? "files" : "config (bf16 estimate)"},
              {"skipped_bytes", ckpt ? ckpt->skipped_bytes() : 0},
              {"skipped_tensors", ckpt ? ckpt->skipped_tensors() : 0},
              {"kv_cache_layers", {{"sliding", cfg.num_cache_layers(KvGroup::Sliding)}, {"full", cfg.num_cache_layers(KvGroup::Full)}}},
              {"kv_bytes_per_token_bf16", {{"sliding", kv_s}, {"full", kv_f}}}};
    j["layers"] = json::array();
    for (int i = 0; i < cfg.num_layers; ++i) j["layers"].push_back(layer_json(cfg.layers[i], i));
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::string out = cfg.describe();
  out += fmt::format("parameters: {:.3f} B ({})\n", double(cfg.parameter_count()) / 1e9, cfg.parameter_count());
  out += fmt::format("weights: {:.2f} GB {}\n", double(weight_bytes) / 1e9,
                     ckpt ? "in the checkpoint files" : "as bf16 (no weight files)");
  if (ckpt)
    out += fmt::format("skipped by a text-only load: {} tensors, {:.2f} GB (vision/audio towers, lm_head)\n",
                       ckpt->skipped_tensors(), double(ckpt->skipped_bytes()) / 1e9);
  out += fmt::format("KV cache per token (bf16, K+V): sliding {} B over {} layers (at most {} tokens per sequence), "
                     "full {} B over {} layers\n",
                     kv_s, cfg.num_cache_layers(KvGroup::Sliding), cfg.sliding_window, kv_f,
                     cfg.num_cache_layers(KvGroup::Full));
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

GS_REGISTER_COMMAND(inspect, "inspect", "print a model's structure as derived from its config.json",
                    [](CLI::App& app) -> std::function<int()> {
                      auto o = std::make_shared<InspectOptions>();
                      app.add_option("--model", o->model,
                                     "model directory or preset name (default: the built-in demo model, created "
                                     "on first use)");
                      app.add_option("--target", o->target,
                                     "for an assistant: the target model (directory or preset) whose KV it reads");
                      app.add_flag("--json", o->json, "machine-readable output");
                      return [o] { return run(*o); };
                    });

}  // namespace
}  // namespace gs::cli
