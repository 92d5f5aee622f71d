// Tensor parallelism on cpu ranks equals one device: TP2 on every golden fixture, TP4 on random
// checkpoints of each fixture kind with 4 query heads (the fixtures have 2, which 4 ranks cannot
// split), in prefill, chunked and decode modes, and with a vocabulary the ranks do not divide;
// greedy continuations identical.
//
// Tolerance: the ranks add the row-parallel partial sums in another order than one device's GEMM
// does (f32 on cpu), so logits differ by rounding only; we assert max |Δ| <= 1e-4 · max(1, |l|).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "checkpoint/checkpoint.h"
#include "core/error.h"
#include "core/npy.h"
#include "kernels/cpu/cpu_backend.h"
#include "model/random_checkpoint.h"
#include "model/weight_loader.h"
#include "runner/tensor_parallel_model.h"

namespace gs {
namespace {

namespace fs = std::filesystem;

std::string golden_dir(const std::string& combo) { return std::string(GS_SOURCE_DIR) + "/fixtures/golden/" + combo; }

std::vector<int> golden_tokens(const std::string& dir) {
  return npy_token_ids(read_npy(dir + "/tokens.npy"), dir + "/tokens.npy");
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream f(path);
  return nlohmann::json::parse(f);
}

// One device's logits and greedy tokens of the checkpoint in `dir`.
struct Reference {
  std::vector<float> logits;
  std::vector<int> greedy;
};

Reference single_device(const std::string& dir, const std::vector<int>& tokens, const SequenceRunOptions& opt,
                        int new_tokens) {
  auto be = make_cpu_backend(2);
  auto ckpt = Checkpoint::open(dir);
  const ModelConfig cfg = ModelConfig::from_json(ckpt->config_json());
  Gemma4Model model(cfg, load_weights(*ckpt, cfg, *be), *be);
  return {sequence_logits(model, tokens, opt), greedy_continuation(model, tokens, new_tokens, opt)};
}

void check_parity(const std::string& dir, const std::vector<int>& tokens, int ranks) {
  for (const LogitsMode mode : {LogitsMode::Prefill, LogitsMode::Chunked, LogitsMode::Decode}) {
    SCOPED_TRACE(testing::Message() << dir << " TP" << ranks << " mode " << int(mode));
    SequenceRunOptions opt;
    opt.mode = mode;
    opt.chunk = 5;
    opt.page_size = mode == LogitsMode::Decode ? 8 : 4;
    const Reference ref = single_device(dir, tokens, opt, 6);
    TensorParallelModel tp(ModelSpec{dir, LoadFormat::Auto}, "cpu", ranks);
    const std::vector<float> logits = sequence_logits(tp, tokens, opt);
    ASSERT_EQ(logits.size(), ref.logits.size());
    float worst = 0.f;
    for (size_t i = 0; i < logits.size(); ++i)
      worst = std::max(worst, std::fabs(logits[i] - ref.logits[i]) / std::max(1.f, std::fabs(ref.logits[i])));
    EXPECT_LE(worst, 1e-4f);
    EXPECT_EQ(greedy_continuation(tp, tokens, 6, opt), ref.greedy);
  }
}

class TpParity : public testing::TestWithParam<std::string> {};

TEST_P(TpParity, TwoRanksEqualOneDeviceOnTheGoldenFixture) {
  const std::string dir = golden_dir(GetParam());
  check_parity(dir, golden_tokens(dir), 2);
}

// The fixture's config with 4 query heads (KV heads as they were: 1 or 2, so 4 ranks replicate
// them) and random weights.
TEST_P(TpParity, FourRanksEqualOneDeviceOnTheFixtureKindWithFourHeads) {
  const std::string src = golden_dir(GetParam());
  nlohmann::json cfg = read_json(src + "/config.json");
  nlohmann::json& text = cfg.contains("text_config") ? cfg["text_config"] : cfg;
  text["num_attention_heads"] = 4;
  const std::string dir = (fs::temp_directory_path() / ("gs_tp4_" + GetParam() + "_" + std::to_string(::getpid()))).string();
  RandomCheckpointOptions opts;
  opts.seed = 7;
  write_random_checkpoint(cfg, read_json(src + "/generation_config.json"), dir, opts);
  check_parity(dir, golden_tokens(src), 4);
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, TpParity, testing::Values("dense", "e2b_like", "k_eq_v", "moe"),
                         [](const testing::TestParamInfo<std::string>& i) { return i.param; });

// A vocabulary the ranks do not divide (509, prime; the demo model's 2027 is prime too): the last
// shards of the embedding and LM head end in zero rows, and the gathered logits drop their columns.
TEST(TpParity, VocabularyTheRanksDoNotDivideIsPadded) {
  for (const std::string kind : {"dense", "e2b_like"}) {
    const std::string src = golden_dir(kind);
    nlohmann::json cfg = read_json(src + "/config.json");
    nlohmann::json& text = cfg.contains("text_config") ? cfg["text_config"] : cfg;
    text["num_attention_heads"] = 4;
    text["vocab_size"] = 509;
    const std::string dir = (fs::temp_directory_path() / ("gs_tp_vocab_" + kind + "_" + std::to_string(::getpid()))).string();
    RandomCheckpointOptions opts;
    opts.seed = 11;
    write_random_checkpoint(cfg, read_json(src + "/generation_config.json"), dir, opts);
    std::vector<int> tokens = golden_tokens(src);
    for (int& t : tokens) t %= 509;
    tokens.back() = 508;  // the last row of the last shard
    for (int ranks : {2, 4}) check_parity(dir, tokens, ranks);
    fs::remove_all(dir);
  }
}

TEST(TpParity, MisfitSizeIsAClearError) {
  try {
    TensorParallelModel tp(ModelSpec{golden_dir("moe"), LoadFormat::Auto}, "cpu", 3);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--tensor-parallel-size 3"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gs
