// The make-model and inspect subcommands, driven through the gemmaserve binary.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <nlohmann/json.hpp>

#include <cctype>
#include <cstdio>
#include <filesystem>
#include <regex>

#include "checkpoint/checkpoint.h"
#include "test_util.h"

namespace gs {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;
using testing::TempDir;

struct Result {
  int rc = -1;
  std::string out;  // stdout and stderr together
};

Result gemmaserve(const std::string& args) {
  Result r;
  std::string cmd = std::string(GS_BINARY) + " " + args + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  int status = ::pclose(p);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// stdout alone (stderr dropped).
std::string gemmaserve_stdout(const std::string& args) {
  std::string out;
  FILE* p = ::popen((std::string(GS_BINARY) + " " + args + " 2>/dev/null").c_str(), "r");
  if (!p) return out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  ::pclose(p);
  return out;
}

// Every --flag that `text` names.
std::vector<std::string> flags_named(const std::string& text) {
  std::vector<std::string> flags;
  for (size_t at = text.find("--"); at != std::string::npos; at = text.find("--", at + 2)) {
    size_t end = at + 2;
    while (end < text.size() && (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '-')) ++end;
    if (end > at + 2) flags.push_back(text.substr(at, end - at));
  }
  return flags;
}

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(GS_BINARY)) GTEST_SKIP() << GS_BINARY << " is not built";
  }
};

TEST_F(Cli, MakeModelDemoIsAFullCheckpoint) {
  TempDir dir;
  Result r = gemmaserve("make-model --preset demo --out " + (dir / "m") + " --seed 3 --max-shard-size 100KB");
  ASSERT_EQ(r.rc, 0) << r.out;
  for (const char* f : {"config.json", "generation_config.json", "model.safetensors.index.json", "tokenizer.json",
                        "tokenizer_config.json", "chat_template.jinja"})
    EXPECT_TRUE(std::filesystem::exists(dir / ("m/" + std::string(f)))) << f;
  auto ckpt = Checkpoint::open(dir / "m");
  EXPECT_GT(ckpt->files().size(), 2u);

  // Same seed, same bytes; another seed, other bytes.
  ASSERT_EQ(gemmaserve("make-model --preset demo --out " + (dir / "a") + " --seed 3").rc, 0);
  ASSERT_EQ(gemmaserve("make-model --preset demo --out " + (dir / "b") + " --seed 3").rc, 0);
  ASSERT_EQ(gemmaserve("make-model --preset demo --out " + (dir / "c") + " --seed 4").rc, 0);
  std::string a = testing::read_file(dir / "a/model.safetensors");
  EXPECT_EQ(a, testing::read_file(dir / "b/model.safetensors"));
  EXPECT_NE(a, testing::read_file(dir / "c/model.safetensors"));

  Result again = gemmaserve("make-model --preset demo --out " + (dir / "a"));
  EXPECT_NE(again.rc, 0);
  EXPECT_THAT(again.out, HasSubstr("not empty"));
}

TEST_F(Cli, MakeModelRefusesRealSizesAndUnknownNames) {
  TempDir dir;
  Result r = gemmaserve("make-model --preset 31b --out " + (dir / "x"));
  EXPECT_NE(r.rc, 0);
  EXPECT_THAT(r.out, HasSubstr("--dummy-ok"));
  EXPECT_FALSE(std::filesystem::exists(dir / "x/model.safetensors"));
  r = gemmaserve("make-model --preset gemma-7b --out " + (dir / "x"));
  EXPECT_NE(r.rc, 0);
  EXPECT_THAT(r.out, HasSubstr("known presets: demo, demo-assistant, e2b"));
  r = gemmaserve("make-model --preset demo --dtype fp8 --out " + (dir / "x"));
  EXPECT_THAT(r.out, HasSubstr("--dtype 'fp8'"));
}

TEST_F(Cli, InspectPresetsAndDirectories) {
  Result r = gemmaserve("inspect --model e2b --json");
  ASSERT_EQ(r.rc, 0) << r.out;
  json j = json::parse(r.out);
  EXPECT_NEAR(j["parameters"].get<double>() / 1e9, 4.63, 0.01);
  EXPECT_EQ(j["kv_bytes_per_token_bf16"]["sliding"], 12288);
  EXPECT_EQ(j["kv_bytes_per_token_bf16"]["full"], 6144);
  EXPECT_EQ(j["layers"][15]["kv_source"], 13);
  EXPECT_EQ(j["layers"][19]["kv_source"], 14);
  EXPECT_EQ(j["layers"][15]["intermediate"], 12288);

  r = gemmaserve("inspect --model 31b-assistant --json");  // bound to its target automatically
  ASSERT_EQ(r.rc, 0) << r.out;
  j = json::parse(r.out);
  EXPECT_EQ(j["layers"][0]["kv_source"], 58);
  EXPECT_EQ(j["layers"][3]["kv_source"], 59);

  TempDir dir;
  ASSERT_EQ(gemmaserve("make-model --preset demo --out " + (dir / "m")).rc, 0);
  r = gemmaserve("inspect --model " + (dir / "m"));
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("Gemma4ForConditionalGeneration"));
  EXPECT_THAT(r.out, HasSubstr("in the checkpoint files"));
  // The demo's tiny vision tower (2 layers: 41 tensors each, plus the patch embedder's two and the
  // projection) is what a text-only load skips.
  EXPECT_THAT(r.out, HasSubstr("skipped by a text-only load: 85 tensors"));
  EXPECT_THAT(r.out, HasSubstr("KV cache per token (bf16, K+V): sliding 3072 B over 3 layers"));

  r = gemmaserve("inspect --model /no/such/dir");
  EXPECT_NE(r.rc, 0);
  EXPECT_THAT(r.out, HasSubstr("neither a model directory nor a preset name"));
}

TEST_F(Cli, InspectWithoutModelIsTheDemoModel) {
  Result r = gemmaserve("inspect --json");
  ASSERT_EQ(r.rc, 0) << r.out;
  json j = json::parse(r.out.substr(r.out.find('{')));
  EXPECT_EQ(j["weights_from"], "files");  // the demo checkpoint that run and serve use
  EXPECT_EQ(j["architecture"], "Gemma4ForConditionalGeneration");
  EXPECT_GT(j["weights_bytes"].get<double>(), 0);
}

TEST_F(Cli, RunEndsItsOutputWithANewline) {
  const std::string args = "run --backend cpu --prompt Hello --max-tokens 4 --temperature 0";
  std::string out = gemmaserve_stdout(args);
  ASSERT_FALSE(out.empty());
  EXPECT_EQ(out.back(), '\n') << out;
  // Also before the stats line on stderr: into one pipe, the answer's line is ended (and flushed)
  // before the log writes, so the log line starts a line of its own.
  Result r = gemmaserve(args);
  ASSERT_EQ(r.rc, 0) << r.out;
  const size_t stats = r.out.find(" prompt + 4 generated tokens");
  ASSERT_NE(stats, std::string::npos) << r.out;
  const size_t line = r.out.rfind('\n', stats);
  ASSERT_NE(line, std::string::npos) << r.out;
  EXPECT_TRUE(std::regex_match(r.out.substr(line + 1, stats - line - 1), std::regex(R"([0-9:. ]+I [0-9]+)"))) << r.out;
}

TEST_F(Cli, KvBudgetErrorsNameFlagsTheCommandHas) {
  for (const std::string cmd : {"serve --port 0", "run --prompt Hello"}) {
    Result r = gemmaserve(cmd + " --backend cpu --kv-cache-memory-gib 0.0001");
    ASSERT_NE(r.rc, 0) << cmd << ": " << r.out;
    const size_t at = r.out.find("error: KV cache budget");
    ASSERT_NE(at, std::string::npos) << cmd << ": " << r.out;
    const std::string error = r.out.substr(at);
    const std::string help = gemmaserve(cmd.substr(0, cmd.find(' ')) + " --help").out;
    const std::vector<std::string> named = flags_named(error);
    EXPECT_FALSE(named.empty()) << error;
    for (const std::string& flag : named) EXPECT_THAT(help, HasSubstr(flag + " ")) << cmd << ": " << error;
  }
}

}  // namespace
}  // namespace gs
