// Datasets: the two range modes' bounds, exact random prompt lengths through a real tokenizer,
// ShareGPT and JSONL parsing with clear errors, and the arrival process.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include "bench/arrivals.h"
#include "bench/dataset.h"
#include "core/error.h"
#include "tokenizer/demo_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace gs::bench {
namespace {

namespace fs = std::filesystem;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(RangeMode, BoundsOfBothConventions) {
  // vLLM: [int(L(1-r)), int(L(1+r))]
  EXPECT_EQ(length_bounds(1024, 0.0, RangeMode::Vllm).lo, 1024);
  EXPECT_EQ(length_bounds(1024, 0.0, RangeMode::Vllm).hi, 1024);
  EXPECT_EQ(length_bounds(1024, 0.5, RangeMode::Vllm).lo, 512);
  EXPECT_EQ(length_bounds(1024, 0.5, RangeMode::Vllm).hi, 1536);
  EXPECT_EQ(length_bounds(100, 0.25, RangeMode::Vllm).lo, 75);
  EXPECT_EQ(length_bounds(100, 0.25, RangeMode::Vllm).hi, 125);
  // SGLang: [int(L r), L], at least 1
  EXPECT_EQ(length_bounds(1024, 0.0, RangeMode::Sglang).lo, 1);
  EXPECT_EQ(length_bounds(1024, 0.0, RangeMode::Sglang).hi, 1024);
  EXPECT_EQ(length_bounds(1024, 0.5, RangeMode::Sglang).lo, 512);
  EXPECT_EQ(length_bounds(1024, 0.5, RangeMode::Sglang).hi, 1024);
  EXPECT_EQ(length_bounds(1024, 1.0, RangeMode::Sglang).lo, 1024);
  EXPECT_EQ(length_bounds(3, 0.9, RangeMode::Vllm).lo, 1);  // int(0.3) = 0 -> 1
  EXPECT_NE(error_of([] { length_bounds(10, 1.0, RangeMode::Vllm); }).find("[0, 1)"), std::string::npos);
  EXPECT_NE(error_of([] { length_bounds(10, 1.5, RangeMode::Sglang); }).find("[0, 1]"), std::string::npos);
  EXPECT_NE(error_of([] { length_bounds(0, 0, RangeMode::Sglang); }).find("at least 1"), std::string::npos);
  EXPECT_NE(error_of([] { parse_range_mode("trtllm"); }).find("not vllm or sglang"), std::string::npos);
}

class DatasetTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(fs::temp_directory_path() / ("gs_bench_ds_" + std::to_string(::getpid())));
    fs::create_directories(*dir_);
    write_demo_tokenizer(dir_->string());
    tok_ = local_bench_tokenizer(dir_->string()).release();
  }
  static void TearDownTestSuite() {
    delete tok_;
    fs::remove_all(*dir_);
    delete dir_;
  }
  std::string write(const std::string& name, const std::string& text) {
    const std::string p = (*dir_ / name).string();
    std::ofstream(p) << text;
    return p;
  }
  const BenchTokenizer& tok() { return *tok_; }
  static fs::path* dir_;
  static BenchTokenizer* tok_;
};
fs::path* DatasetTest::dir_ = nullptr;
BenchTokenizer* DatasetTest::tok_ = nullptr;

TEST_F(DatasetTest, RandomPromptsHaveTheirDrawnLengthsExactly) {
  for (RangeMode mode : {RangeMode::Vllm, RangeMode::Sglang}) {
    RandomDatasetOptions o;
    o.num_prompts = 30;
    o.input_len = 64;
    o.output_len = 16;
    o.range_ratio = 0.5;
    o.range_mode = mode;
    o.seed = std::random_device{}();
    const LengthBounds in = length_bounds(64, 0.5, mode), out = length_bounds(16, 0.5, mode);
    for (const auto& r : random_dataset(tok(), o)) {
      EXPECT_EQ(static_cast<int>(tok().encode(r.prompt).size()), r.prompt_len);
      EXPECT_GE(r.prompt_len, in.lo);
      EXPECT_LE(r.prompt_len, in.hi);
      EXPECT_GE(r.output_len, out.lo);
      EXPECT_LE(r.output_len, out.hi);
    }
  }
}

TEST_F(DatasetTest, RandomPrefixIsSharedAndSeedsReproduce) {
  RandomDatasetOptions o;
  o.num_prompts = 5;
  o.input_len = 20;
  o.prefix_len = 30;
  o.seed = std::random_device{}();
  const auto a = random_dataset(tok(), o);
  const auto b = random_dataset(tok(), o);
  const std::vector<int> p0 = tok().encode(a[0].prompt);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].prompt, b[i].prompt);
    EXPECT_EQ(a[i].prompt_len, 50);
    const std::vector<int> pi = tok().encode(a[i].prompt);
    ASSERT_EQ(pi.size(), 50u);
    // The prefix's ids, apart from where its last token may merge with what follows.
    EXPECT_TRUE(std::equal(p0.begin(), p0.begin() + 28, pi.begin())) << i;
  }
}

TEST_F(DatasetTest, ShareGptFollowsVllmFilter) {
  const std::string long_text(3000, 'x');
  const std::string path = write("sg.json", R"([
    {"conversations": [{"from": "human", "value": "Tell me a story about a cat and a dog please."},
                       {"from": "gpt", "value": "Once upon a time there was a cat and a dog who were friends."}]},
    {"conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "Hello there, how are you doing?"}]},
    {"conversations": [{"from": "human", "value": "Only one turn here, which is not enough."}]},
    {"conversations": [{"from": "human", "value": "What is the capital of France, and why?"},
                       {"from": "gpt", "value": "Paris is the capital of France for historical reasons."}]}
  ])");
  const auto reqs = sharegpt_dataset(path, tok(), 2, 0, 1);
  ASSERT_EQ(reqs.size(), 2u);
  for (const auto& r : reqs) {
    EXPECT_EQ(r.prompt_len, static_cast<int>(tok().encode(r.prompt).size()));
    EXPECT_GE(r.output_len, 4);
    EXPECT_NE(r.prompt, "hi");  // shorter than 4 tokens: filtered
  }
  EXPECT_NE(error_of([&] { sharegpt_dataset(path, tok(), 3, 0, 1); }).find("fewer than --num-prompts 3"),
            std::string::npos);
  EXPECT_EQ(sharegpt_dataset(path, tok(), 3, 7, 1).size(), 3u);  // fixed output length: no filter
  EXPECT_NE(error_of([&] { sharegpt_dataset(write("bad.json", "{"), tok(), 1, 0, 1); }).find("invalid JSON"),
            std::string::npos);
  EXPECT_NE(error_of([&] { sharegpt_dataset(write("obj.json", "{}"), tok(), 1, 0, 1); }).find("JSON list"),
            std::string::npos);
  EXPECT_NE(error_of([&] { sharegpt_dataset(write("nc.json", "[{\"x\": 1}]"), tok(), 1, 0, 1); })
                .find("entry 0 has no \"conversations\""),
            std::string::npos);
  EXPECT_NE(error_of([&] { sharegpt_dataset((*dir_ / "missing.json").string(), tok(), 1, 0, 1); }).find("cannot open"),
            std::string::npos);
}

TEST_F(DatasetTest, JsonlPromptsAndErrors) {
  const std::string path = write("p.jsonl", "{\"prompt\": \"hello world\", \"output_len\": 5}\n\n{\"prompt\": \"again\"}\n");
  const auto reqs = jsonl_dataset(path, &tok(), 0, 33);
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[0].output_len, 5);
  EXPECT_EQ(reqs[1].output_len, 33);
  EXPECT_EQ(reqs[1].prompt_len, static_cast<int>(tok().encode("again").size()));
  EXPECT_EQ(jsonl_dataset(path, nullptr, 1, 33).at(0).prompt_len, 0);
  EXPECT_NE(error_of([&] { jsonl_dataset(path, nullptr, 3, 1); }).find("fewer than --num-prompts 3"), std::string::npos);
  EXPECT_NE(error_of([&] { jsonl_dataset(write("a.jsonl", "{\"prompt\": 1}\n"), nullptr, 0, 1); })
                .find("a.jsonl:1: \"prompt\" must be a string"),
            std::string::npos);
  EXPECT_NE(error_of([&] { jsonl_dataset(write("b.jsonl", "\n{\"prompt\": \"x\", \"output_len\": 0}\n"), nullptr, 0, 1); })
                .find("b.jsonl:2: \"output_len\" must be a positive integer"),
            std::string::npos);
  EXPECT_NE(error_of([&] { jsonl_dataset(write("c.jsonl", "{oops\n"), nullptr, 0, 1); }).find("c.jsonl:1: invalid JSON"),
            std::string::npos);
  EXPECT_NE(error_of([&] { jsonl_dataset(write("d.jsonl", "\n\n"), nullptr, 0, 1); }).find("no prompts"),
            std::string::npos);
}

TEST(Arrivals, InfiniteRateSendsAllAtOnce) {
  for (double t : arrival_times(10, INFINITY, 1, 0)) EXPECT_EQ(t, 0);
  EXPECT_THROW(arrival_times(3, 0, 1, 0), Error);
  EXPECT_THROW(arrival_times(3, 1, 0, 0), Error);
}

// Gamma(k, 1/(rate k)) gaps: mean 1/rate and variance 1/(k rate^2) whatever the burstiness k.
TEST(Arrivals, GapMeansAndVariancesMatchTheGammaProcess) {
  const uint64_t seed = std::random_device{}();
  for (double k : {0.5, 1.0, 4.0}) {
    const double rate = 8;
    const int n = 40000;
    const auto t = arrival_times(n, rate, k, seed);
    ASSERT_EQ(t.size(), static_cast<size_t>(n));
    EXPECT_EQ(t[0], 0);
    double sum = 0, sq = 0;
    for (int i = 1; i < n; ++i) {
      const double g = t[i] - t[i - 1];
      ASSERT_GE(g, 0);
      sum += g;
      sq += g * g;
    }
    const double m = sum / (n - 1), var = sq / (n - 1) - m * m;
    const double want_var = 1 / (k * rate * rate);
    // 6 standard errors of the mean: fails by chance about once in 10^9 runs.
    EXPECT_NEAR(m, 1 / rate, 6 * std::sqrt(want_var / (n - 1))) << "burstiness " << k << " seed " << seed;
    EXPECT_NEAR(var / want_var, 1.0, 0.15) << "burstiness " << k << " seed " << seed;
  }
}

}  // namespace
}  // namespace gs::bench
