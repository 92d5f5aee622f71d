#include "model/demo_model.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "chat/demo_template.h"
#include "checkpoint/checkpoint.h"
#include "core/error.h"
#include "core/log.h"
#include "model/presets.h"
#include "tokenizer/demo_tokenizer.h"

namespace gs {

namespace fs = std::filesystem;
using nlohmann::json;

ModelConfig write_preset_checkpoint(const std::string& preset, const std::string& dir,
                                    const RandomCheckpointOptions& opts) {
  ModelConfig cfg =
      write_random_checkpoint(preset_config_json(preset), preset_generation_config_json(preset), dir, opts);
  if (preset == "demo") {
    write_demo_tokenizer(dir);
    write_text_file(dir + "/chat_template.jinja", demo_chat_template());
  }
  return cfg;
}

std::string default_demo_dir(const std::string& preset) {
  if (const char* home = std::getenv("GEMMASERVE_HOME"); home && *home) return std::string(home) + "/" + preset;
  const char* h = std::getenv("HOME");
  GS_CHECK(h && *h, "cannot place the demo model: neither GEMMASERVE_HOME nor HOME is set");
  return std::string(h) + "/.cache/gemmaserve/" + preset;
}

std::string ensure_demo_checkpoint(const std::string& dir_in, const std::string& preset) {
  GS_CHECK(preset == "demo" || preset == "demo-assistant", "{} is not a built-in demo model", preset);
  const std::string dir = dir_in.empty() ? default_demo_dir(preset) : dir_in;
  std::vector<std::string> files = {"/config.json", "/model.safetensors"};
  if (preset == "demo") files.insert(files.end(), {"/tokenizer.json", "/chat_template.jinja"});
  // Complete and current: same config as the preset now, weights (and tokenizer) present.
  auto current = [&] {
    for (const std::string& f : files)
      if (!fs::exists(dir + f)) return false;
    try {
      return read_json_file(dir + "/config.json") == preset_config_json(preset);
    } catch (const Error&) {
      return false;
    }
  };
  if (current()) return dir;
  log::info("creating the {} model in {}", preset, dir);
  std::error_code ec;
  fs::create_directories(fs::path(dir).parent_path(), ec);
  std::string scratch = dir + ".tmp-" + std::to_string(::getpid());
  fs::remove_all(scratch, ec);
  write_preset_checkpoint(preset, scratch, RandomCheckpointOptions{});
  if (fs::exists(dir)) {  // stale: move it aside first so the rename below is atomic
    std::string old = dir + ".old-" + std::to_string(::getpid());
    fs::rename(dir, old, ec);
    fs::remove_all(old, ec);
  }
  fs::rename(scratch, dir, ec);
  if (ec) {  // another process won the race; its copy is as good as ours
    fs::remove_all(scratch, ec);
    if (!current()) throw Error("cannot create the {} model in {}", preset, dir);
  }
  return dir;
}

}  // namespace gs
