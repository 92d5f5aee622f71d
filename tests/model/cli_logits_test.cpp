// `gemmaserve logits` end to end on a golden fixture: .npy in, .npy out, every mode, and a clear
// error for bad input. Needs the gemmaserve binary (built with the full project).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "core/npy.h"
#include "golden.h"

namespace gs::test {
namespace {

struct CliResult {
  int status;
  std::string output;
};

// ctest runs each test in its own process, in parallel: every file a test writes carries the test's
// name, or two tests read each other's output.
std::string test_file(const std::string& suffix) {
  return testing::TempDir() + "/gs_cli_logits_" + testing::UnitTest::GetInstance()->current_test_info()->name() + "_" +
         std::to_string(::getpid()) + suffix;
}

CliResult run_cli(const std::string& args) {
  const std::string log = test_file(".log");
  const std::string cmd = std::string(GS_BINARY) + " " + args + " > " + log + " 2>&1";
  const int rc = std::system(cmd.c_str());
  std::ifstream f(log);
  std::string out((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, out};
}

class CliLogits : public testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(GS_BINARY)) GTEST_SKIP() << "gemmaserve binary not built: " << GS_BINARY;
  }
};

TEST_F(CliLogits, EveryModeMatchesTheReference) {
  const std::string combo = "e2b_like";
  const Golden g = load_golden(combo);
  const std::string out = test_file(".npy");
  for (const std::string mode : {"prefill", "decode", "chunked --chunk 7"}) {
    std::filesystem::remove(out);
    CliResult r = run_cli("logits --model " + golden_dir(combo) + " --tokens " + golden_dir(combo) +
                    "/tokens.npy --out " + out + " --backend cpu --mode " + mode);
    ASSERT_EQ(r.status, 0) << mode << ":\n" << r.output;
    NpyArray a = read_npy(out);
    ASSERT_EQ(a.dtype, DType::F32);
    ASSERT_EQ(a.shape, (std::vector<int64_t>{int64_t(g.tokens.size()), g.vocab}));
    float worst = 0;
    for (int64_t i = 0; i < a.numel(); ++i) worst = std::max(worst, std::fabs(a.as<float>()[i] - g.logits[size_t(i)]));
    EXPECT_LE(worst, 2e-3f) << mode;
  }
}

TEST_F(CliLogits, BadInputIsAClearError) {
  const std::string bad = test_file("_bad_ids.npy");
  const int32_t ids[] = {2, 100000};
  write_npy(bad, DType::I32, {2}, ids);
  CliResult r = run_cli("logits --model " + golden_dir("dense") + " --tokens " + bad + " --out " + test_file("_unused.npy"));
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("100000"), std::string::npos) << r.output;
  r = run_cli("logits --model " + golden_dir("dense") + " --tokens " + bad + " --out x.npy --mode chunked");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("--chunk"), std::string::npos) << r.output;
}

// Images: one image token per image in --tokens, the pixels from --image-pixels; the logits are
// the expanded prompt's (boi, soft tokens, eoi), as the reference computed them.
TEST_F(CliLogits, ImagePixelsMatchTheReference) {
  const std::string fx = std::string(GS_SOURCE_DIR) + "/fixtures/vision_golden";
  const std::string out = test_file(".npy");
  for (const std::string mode : {"prefill", "chunked --chunk 7"}) {
    std::filesystem::remove(out);
    CliResult r = run_cli("logits --model " + fx + "/vision_std --tokens " + fx + "/vision_std/prompt_p3.npy --out " +
                          out + " --backend cpu --mode " + mode + " --image-pixels " + fx +
                          "/images/img1.npy --image-pixels " + fx + "/images/img0.npy --image-pixels " + fx +
                          "/images/img2.npy");
    ASSERT_EQ(r.status, 0) << mode << ":\n" << r.output;
    NpyArray a = read_npy(out), ref = read_npy(fx + "/vision_std/logits_p3.npy");
    ASSERT_EQ(a.shape, ref.shape);
    float worst = 0;
    for (int64_t i = 0; i < a.numel(); ++i) worst = std::max(worst, std::fabs(a.as<float>()[i] - ref.as<float>()[i]));
    EXPECT_LE(worst, 2e-2f) << mode;  // the image fixtures' bound (vision_golden_test.cpp says why)
  }
  // One image for three image tokens: an error naming both counts.
  CliResult r = run_cli("logits --model " + fx + "/vision_std --tokens " + fx + "/vision_std/prompt_p3.npy --out " +
                        out + " --image-pixels " + fx + "/images/img0.npy");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("more image tokens (3) than images (1)"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace gs::test
