// `gemmaserve logits --tensor-parallel-size N` end to end on cpu ranks: the golden reference's
// logits within the single-device tolerance, and a clear error for a size the model cannot split.
// Needs the gemmaserve binary (built with the full project).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/npy.h"

namespace gs {
namespace {

std::string fixture(const std::string& combo) { return std::string(GS_SOURCE_DIR) + "/fixtures/golden/" + combo; }

std::string test_file(const std::string& suffix) {
  return testing::TempDir() + "/gs_cli_tp_" + testing::UnitTest::GetInstance()->current_test_info()->name() + "_" +
         std::to_string(::getpid()) + suffix;
}

int run_cli(const std::string& args, std::string* output) {
  const std::string log = test_file(".log");
  const int rc = std::system((std::string(GS_BINARY) + " " + args + " > " + log + " 2>&1").c_str());
  std::ifstream f(log);
  output->assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

class CliTensorParallel : public testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(GS_BINARY)) GTEST_SKIP() << "gemmaserve binary not built: " << GS_BINARY;
  }
};

TEST_F(CliTensorParallel, TwoRanksMatchTheReference) {
  for (const std::string combo : {"moe", "e2b_like"}) {
    const std::string dir = fixture(combo), out = test_file(".npy");
    std::string log;
    ASSERT_EQ(run_cli("logits --model " + dir + " --tokens " + dir + "/tokens.npy --out " + out +
                          " --backend cpu --mode decode --tensor-parallel-size 2",
                      &log),
              0)
        << log;
    EXPECT_NE(log.find("2 ranks"), std::string::npos) << log;
    const NpyArray got = read_npy(out), ref = read_npy(dir + "/logits.npy");
    ASSERT_EQ(got.shape, ref.shape);
    float worst = 0;
    for (int64_t i = 0; i < got.numel(); ++i) worst = std::max(worst, std::fabs(got.as<float>()[i] - ref.as<float>()[i]));
    EXPECT_LE(worst, 2e-3f) << combo;  // tests/model/golden_parity_test.cpp's bound for one device
    std::filesystem::remove(out);
  }
}

TEST_F(CliTensorParallel, ASizeThatDoesNotDivideTheHeadsIsAClearError) {
  const std::string dir = fixture("dense");
  std::string log;
  EXPECT_NE(run_cli("logits --model " + dir + " --tokens " + dir + "/tokens.npy --out " + test_file(".npy") +
                        " --backend cpu --tensor-parallel-size 3",
                    &log),
            0);
  EXPECT_NE(log.find("--tensor-parallel-size 3: num_attention_heads (4) is not a multiple of it"), std::string::npos)
      << log;
}

}  // namespace
}  // namespace gs
