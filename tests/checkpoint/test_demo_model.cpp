#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "checkpoint/checkpoint.h"
#include "core/error.h"
#include "fake_backend.h"
#include "kernels/backends.h"
#include "model/demo_model.h"
#include "model/dummy_weights.h"
#include "model/presets.h"
#include "model/weight_loader.h"
#include "test_util.h"
#include "tokenizer/tokenizer.h"

namespace gs {
namespace {

namespace fs = std::filesystem;
using testing::FakeBackend;
using testing::TempDir;

TEST(DemoModel, CreatedOnceCompleteAndLoadable) {
  TempDir home;
  std::string dir = ensure_demo_checkpoint(home / "demo");
  EXPECT_EQ(dir, home / "demo");
  for (const char* f : {"config.json", "generation_config.json", "model.safetensors", "tokenizer.json",
                        "tokenizer_config.json", "chat_template.jinja"})
    EXPECT_TRUE(fs::exists(dir + "/" + f)) << f;
  auto stamp = fs::last_write_time(dir + "/model.safetensors");
  EXPECT_EQ(ensure_demo_checkpoint(dir), dir);  // current: left alone
  EXPECT_EQ(fs::last_write_time(dir + "/model.safetensors"), stamp);

  auto ckpt = Checkpoint::open(dir);
  ModelConfig cfg = ModelConfig::from_json(ckpt->config_json());
  EXPECT_EQ(cfg.describe(), preset_config("demo").describe());

  // The stop ids of the demo are the demo tokenizer's <eos> and <turn|>.
  auto tok = Tokenizer::load(dir);
  EXPECT_EQ(cfg.vocab_size, tok->vocab_size());
  EXPECT_EQ(cfg.eos_token_ids, (std::vector<int>{*tok->token_id("<eos>"), *tok->token_id("<turn|>")}));
  EXPECT_EQ(ckpt->generation_config().eos_token_ids, cfg.eos_token_ids);

  FakeBackend be;
  ModelWeights w = load_weights(*ckpt, cfg, be);
  EXPECT_EQ(w.embed.shape, (Shape{cfg.vocab_size, 128}));
  EXPECT_EQ(w.ple_table.shape, (Shape{cfg.vocab_size, 6 * 16}));

  // A stale demo (an older config) is replaced.
  testing::write_file(dir + "/config.json", "{}");
  EXPECT_EQ(ensure_demo_checkpoint(dir), dir);
  EXPECT_EQ(ModelConfig::from_file(dir + "/config.json").hidden_size, 128);
}

TEST(DemoModel, DefaultDirectoryFollowsGemmaserveHome) {
  const char* old = std::getenv("GEMMASERVE_HOME");
  std::string saved = old ? old : "";
  ::setenv("GEMMASERVE_HOME", "/some/where", 1);
  EXPECT_EQ(default_demo_dir(), "/some/where/demo");
  ::unsetenv("GEMMASERVE_HOME");
  EXPECT_THAT(default_demo_dir(), ::testing::EndsWith("/.cache/gemmaserve/demo"));
  if (old) ::setenv("GEMMASERVE_HOME", saved.c_str(), 1);
}

TEST(DemoModel, RealSizePresetsAreNotWrittenByAccident) {
  for (const std::string& name : preset_names())
    EXPECT_EQ(preset_is_real_size(name), name != "demo" && name != "demo-assistant") << name;
}

// The demo's drafter: written on first use beside the demo, an MTP assistant over the demo's
// vocabulary that binds to the demo's caches.
TEST(DemoModel, DemoAssistantDraftsForTheDemo) {
  TempDir dir;
  const std::string a = ensure_demo_checkpoint(dir.path() + "/demo-assistant", "demo-assistant");
  const std::string d = ensure_demo_checkpoint(dir.path() + "/demo");
  ModelConfig acfg = ModelConfig::from_file(a + "/config.json");
  const ModelConfig dcfg = ModelConfig::from_file(d + "/config.json");
  EXPECT_TRUE(acfg.is_assistant);
  EXPECT_EQ(acfg.vocab_size, dcfg.vocab_size);
  EXPECT_NO_THROW(acfg.bind_assistant_to(dcfg));
  EXPECT_FALSE(fs::exists(a + "/tokenizer.json"));  // the demo's tokenizer serves both
  EXPECT_EQ(ensure_demo_checkpoint(dir.path() + "/demo-assistant", "demo-assistant"), a);  // current: kept
}

// With the CPU backend: the demo checkpoint loads, and dummy weights drawn on the device equal the
// shared generator's values (what makes cpu and cuda dummy models identical).
TEST(DemoModel, LoadsOnTheCpuBackend) {
  TempDir home;
  std::string dir = ensure_demo_checkpoint(home / "demo");
  auto ckpt = Checkpoint::open(dir);
  ModelConfig cfg = ModelConfig::from_json(ckpt->config_json());
  auto cpu = create_backend("cpu");
  ModelWeights w = load_weights(*ckpt, cfg, *cpu);
  FakeBackend fake;
  ModelWeights ref = load_weights(*ckpt, cfg, fake);
  EXPECT_EQ(w.bytes(), ref.bytes());
  std::vector<uint8_t> got(w.layers[2].qkv.nbytes());
  cpu->copy_to_host(w.layers[2].qkv, got.data());
  ASSERT_EQ(w.layers[2].qkv.dtype, ref.layers[2].qkv.dtype);
  EXPECT_EQ(std::memcmp(got.data(), ref.layers[2].qkv.data, got.size()), 0);

  ModelWeights d_cpu = make_dummy_weights(cfg, *cpu, 11);
  ModelWeights d_ref = make_dummy_weights(cfg, fake, 11);
  ASSERT_EQ(d_cpu.embed.dtype, d_ref.embed.dtype);
  std::vector<uint8_t> e(d_cpu.embed.nbytes());
  cpu->copy_to_host(d_cpu.embed, e.data());
  EXPECT_EQ(std::memcmp(e.data(), d_ref.embed.data, e.size()), 0);
}

}  // namespace
}  // namespace gs
