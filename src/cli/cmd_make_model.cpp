// gemmaserve make-model: a checkpoint directory with random weights for a preset shape, laid out
// like a Hugging Face download (config, generation config, safetensors shards + index; for the demo
// preset also its tokenizer and chat template).
#include <filesystem>
#include <memory>

#include "cli/command.h"
#include "core/error.h"
#include "model/demo_model.h"
#include "model/presets.h"

namespace gs::cli {
namespace {

struct MakeModelOptions {
  std::string preset;
  std::string out;
  uint64_t seed = 0;
  std::string dtype = "bf16";
  std::string max_shard_size = "2GB";
  bool dummy_ok = false;
  bool force = false;
};

// "2GB", "500MB", "64KiB" or a plain number of bytes.
size_t parse_size(const std::string& s) {
  size_t pos = 0;
  double v = 0;
  try {
    v = std::stod(s, &pos);
  } catch (const std::exception&) {
    throw Error("--max-shard-size '{}': expected a size such as 2GB, 500MB or 1048576", s);
  }
  std::string unit = s.substr(pos);
  double mult = 1;
  if (unit == "" || unit == "B") mult = 1;
  else if (unit == "KB") mult = 1e3;
  else if (unit == "MB") mult = 1e6;
  else if (unit == "GB") mult = 1e9;
  else if (unit == "KiB") mult = 1024.0;
  else if (unit == "MiB") mult = 1024.0 * 1024;
  else if (unit == "GiB") mult = 1024.0 * 1024 * 1024;
  else throw Error("--max-shard-size '{}': unknown unit '{}' (B, KB, MB, GB, KiB, MiB, GiB)", s, unit);
  GS_CHECK(v > 0, "--max-shard-size must be positive, got '{}'", s);
  return size_t(v * mult);
}

int run(const MakeModelOptions& o) {
  namespace fs = std::filesystem;
  ModelConfig cfg = preset_config(o.preset);  // unknown names fail here, listing the known ones
  RandomCheckpointOptions ro;
  ro.seed = o.seed;
  if (o.dtype == "bf16") ro.dtype = DType::BF16;
  else if (o.dtype == "f32") ro.dtype = DType::F32;
  else throw Error("--dtype '{}': expected bf16 or f32", o.dtype);
  ro.max_shard_bytes = parse_size(o.max_shard_size);
  const double gb = double(cfg.parameter_count()) * double(dtype_size(ro.dtype)) / 1e9;
  if (preset_is_real_size(o.preset) && !o.dummy_ok)
    throw Error("preset '{}' has the real model's shape: its random checkpoint is {:.1f} GB on disk. Pass "
                "--dummy-ok to write it anyway (to measure performance without files: gemmaserve serve or bench-decode "
                "--model {} --load-format dummy)",
                o.preset, gb, o.preset);
  std::error_code ec;
  if (fs::exists(o.out) && !fs::is_empty(o.out, ec) && !o.force)
    throw Error("--out {}: the directory exists and is not empty (pass --force to write into it)", o.out);
  write_preset_checkpoint(o.preset, o.out, ro);
  const double params = double(cfg.parameter_count());
  std::printf("wrote %s: preset %s, %.2f %s parameters (%s), %.3f GB\n", o.out.c_str(), o.preset.c_str(),
              params >= 1e9 ? params / 1e9 : params / 1e6, params >= 1e9 ? "B" : "M", o.dtype.c_str(), gb);
  return 0;
}

GS_REGISTER_COMMAND(make_model, "make-model", "write a checkpoint directory with random weights for a preset shape",
                    [](CLI::App& app) -> std::function<int()> {
                      auto o = std::make_shared<MakeModelOptions>();
                      std::string names;
                      for (const auto& n : preset_names()) names += (names.empty() ? "" : ", ") + n;
                      app.add_option("--preset", o->preset, "model shape: " + names)->required();
                      app.add_option("--out", o->out, "directory to write (created if missing)")->required();
                      app.add_option("--seed", o->seed, "seed of the random weights (same seed, same bytes)");
                      app.add_option("--dtype", o->dtype, "bf16 (as released) or f32");
                      app.add_option("--max-shard-size", o->max_shard_size,
                                     "split the weights into shards of at most this size, plus "
                                     "model.safetensors.index.json (default 2GB)");
                      app.add_flag("--dummy-ok", o->dummy_ok,
                                   "allow the real-size presets (tens of GB of random weights)");
                      app.add_flag("--force", o->force, "write into a non-empty directory");
                      return [o] { return run(*o); };
                    });

}  // namespace
}  // namespace gs::cli
