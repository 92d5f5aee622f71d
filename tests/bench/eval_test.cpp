// gemmaserve eval's pieces: the dataset format and its errors, the pinned prompt, answer
// extraction, log-likelihood scoring from echo responses, accuracy and its standard error.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include "bench/eval/eval_runner.h"
#include "bench/eval/mc_dataset.h"
#include "bench/eval/mc_prompt.h"
#include "core/error.h"

namespace gs::bench {
namespace {

McItem item(int n_choices, int answer = 0) {
  McItem it;
  it.question = "Which?";
  for (int i = 0; i < n_choices; ++i) it.choices.push_back("choice " + std::to_string(i));
  it.answer = answer;
  return it;
}

TEST(McPrompt, PinnedGeneratePrompt) {
  McItem it = item(3);
  it.question = "What is 2+2?";
  it.choices = {"3", "4", "5"};
  EXPECT_EQ(generate_prompt(it),
            "What is 2+2?\n\nA. 3\nB. 4\nC. 5\n\nAnswer with the letter of the correct choice only, in the form "
            "\"Answer: X\".");
  EXPECT_EQ(loglikelihood_context(it), "Question: What is 2+2?\nAnswer:");
  EXPECT_EQ(loglikelihood_continuation(it, 1), " 4");
}

TEST(McPrompt, AnswerExtraction) {
  const McItem it = item(4);
  auto ex = [&](const std::string& s) { return extract_answer(s, it); };
  EXPECT_EQ(ex("Answer: C"), 2);
  EXPECT_EQ(ex("answer:B"), 1);
  EXPECT_EQ(ex("The answer is (D)."), 3);
  EXPECT_EQ(ex("ANSWER: A\n"), 0);
  EXPECT_EQ(ex("Answer：B"), 1);  // full-width colon
  EXPECT_EQ(ex("Let me think. A seems wrong. Answer: B. On reflection, Answer: C"), 2);  // the last wins
  EXPECT_EQ(ex("B"), 1);
  EXPECT_EQ(ex("  (C) because it is"), 2);
  EXPECT_EQ(ex("D."), 3);
  EXPECT_EQ(ex("choice 2"), 2);  // the text of a choice
  EXPECT_EQ(ex("Answer: E"), std::nullopt);  // not offered (and nothing else names a choice)
  EXPECT_EQ(ex("Answer: Apple"), std::nullopt);
  EXPECT_EQ(ex("Because the sky is blue"), std::nullopt);  // "B" opening a word is not a letter
  EXPECT_EQ(ex("I don't know"), std::nullopt);
  EXPECT_EQ(ex(""), std::nullopt);
  EXPECT_EQ(ex("the answer is a mystery"), std::nullopt);  // lower-case letters are words
}

class McDatasetTest : public ::testing::Test {
 protected:
  std::string write(const std::string& text) {
    const auto p = std::filesystem::temp_directory_path() /
                   ("gs_mc_" + std::to_string(::getpid()) + "_" + std::to_string(n_++) + ".jsonl");
    std::ofstream(p) << text;
    paths_.push_back(p);
    return p.string();
  }
  std::string error_of(const std::string& text) {
    try {
      load_mc_dataset(write(text));
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  }
  void TearDown() override {
    for (const auto& p : paths_) std::filesystem::remove(p);
  }
  int n_ = 0;
  std::vector<std::filesystem::path> paths_;
};

TEST_F(McDatasetTest, ParsesIndicesLettersIdsAndLimit) {
  const auto items = load_mc_dataset(write("{\"question\":\"q1\",\"choices\":[\"a\",\"b\"],\"answer\":1}\n\n"
                                           "{\"id\":\"x7\",\"question\":\"q2\",\"choices\":[\"a\",\"b\",\"c\"],\"answer\":\"c\"}\n"));
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0].answer, 1);
  EXPECT_EQ(items[0].id, "0");
  EXPECT_EQ(items[1].answer, 2);
  EXPECT_EQ(items[1].id, "x7");
  EXPECT_EQ(load_mc_dataset(write("{\"question\":\"q\",\"choices\":[\"a\",\"b\"],\"answer\":0}\n"
                                  "{\"question\":\"q\",\"choices\":[\"a\",\"b\"],\"answer\":0}\n"),
                            1)
                .size(),
            1u);
}

TEST_F(McDatasetTest, ErrorsNameLineAndField) {
  EXPECT_NE(error_of("{\"choices\":[\"a\",\"b\"],\"answer\":0}").find(":1: \"question\""), std::string::npos);
  EXPECT_NE(error_of("\n{\"question\":\"q\",\"choices\":[\"a\"],\"answer\":0}").find(":2: \"choices\" must be a list of 2 to 26"),
            std::string::npos);
  EXPECT_NE(error_of("{\"question\":\"q\",\"choices\":[\"a\",3],\"answer\":0}").find("which is not a string"),
            std::string::npos);
  EXPECT_NE(error_of("{\"question\":\"q\",\"choices\":[\"a\",\"b\"],\"answer\":2}").find("not a choice index (0..1)"),
            std::string::npos);
  EXPECT_NE(error_of("{\"question\":\"q\",\"choices\":[\"a\",\"b\"],\"answer\":\"C\"}").find("letters A..B"),
            std::string::npos);
  EXPECT_NE(error_of("{\"question\":\"q\",\"choices\":[\"a\",\"b\"]}").find("\"answer\" is missing"), std::string::npos);
  EXPECT_NE(error_of("{\"question\":\"q\",\"choices\":[\"a\",\"b\"],\"answer\":[0]}").find("index or a letter"),
            std::string::npos);
  EXPECT_NE(error_of("not json").find(":1: invalid JSON"), std::string::npos);
  EXPECT_NE(error_of("").find("no items"), std::string::npos);
}

TEST(McDataset, TheRepoFixtureLoads) {
  const auto items = load_mc_dataset(std::string(GS_SOURCE_DIR) + "/fixtures/eval/mini_mc.jsonl");
  EXPECT_GE(items.size(), 20u);
  for (const auto& it : items) EXPECT_LT(it.answer, static_cast<int>(it.choices.size()));
}

nlohmann::json echo_response(const std::vector<std::pair<std::string, double>>& prompt, int prompt_tokens_in_usage) {
  nlohmann::json tokens = nlohmann::json::array(), lps = nlohmann::json::array();
  for (size_t i = 0; i < prompt.size(); ++i) {
    tokens.push_back(prompt[i].first);
    lps.push_back(i == 0 ? nlohmann::json(nullptr) : nlohmann::json(prompt[i].second));
  }
  tokens.push_back("gen");
  lps.push_back(-0.5);
  nlohmann::json r = {{"choices", {{{"text", "..."}, {"logprobs", {{"tokens", tokens}, {"token_logprobs", lps}}}}}}};
  if (prompt_tokens_in_usage >= 0) r["usage"] = {{"prompt_tokens", prompt_tokens_in_usage}};
  return r;
}

TEST(Loglikelihood, SumsTheTokensCoveringTheContinuation) {
  // "<bos>" "Question" ":" " x" "\nAnswer" ":" " Par" "is"  + generated
  const std::vector<std::pair<std::string, double>> p = {{"<bos>", 0},      {"Question", -1}, {":", -0.1},
                                                         {" x", -2},       {"\nAnswer", -0.3}, {":", -0.2},
                                                         {" Par", -1.25}, {"is", -0.5}};
  EXPECT_DOUBLE_EQ(continuation_logprob(echo_response(p, 8), " Paris"), -1.75);
  EXPECT_DOUBLE_EQ(continuation_logprob(echo_response(p, -1), " Paris"), -1.75);  // no usage: all but the last
  EXPECT_DOUBLE_EQ(continuation_logprob(echo_response(p, 8), "is"), -0.5);
  // A token straddling the join is counted whole.
  EXPECT_DOUBLE_EQ(continuation_logprob(echo_response(p, 8), "s"), -0.5);
  EXPECT_THROW(continuation_logprob(echo_response(p, 8), std::string(100, 'x')), Error);  // reaches the null logprob
  EXPECT_THROW(continuation_logprob(echo_response(p, 20), "x"), Error);
  EXPECT_THROW(continuation_logprob(nlohmann::json::object(), "x"), Error);
  EXPECT_THROW(continuation_logprob({{"choices", {{{"text", "a"}, {"logprobs", nullptr}}}}}, "x"), Error);
}

TEST(Accuracy, MeanAndSampleStandardError) {
  const Accuracy a = accuracy({true, false, true, true});
  EXPECT_EQ(a.n, 4);
  EXPECT_EQ(a.correct, 3);
  EXPECT_DOUBLE_EQ(a.acc, 0.75);
  // The sample standard deviation of {1,0,1,1} over sqrt(4), as lm-evaluation-harness reports.
  EXPECT_NEAR(a.stderr_, std::sqrt(0.75 * 0.25 / 3), 1e-12);
  std::mt19937_64 rng(std::random_device{}());
  std::vector<bool> v(2 + rng() % 500);
  double mean = 0;
  for (size_t i = 0; i < v.size(); ++i) mean += (v[i] = rng() % 3 == 0) ? 1 : 0;
  mean /= static_cast<double>(v.size());
  double ss = 0;
  for (bool b : v) ss += ((b ? 1 : 0) - mean) * ((b ? 1 : 0) - mean);
  const double want = std::sqrt(ss / static_cast<double>(v.size() - 1)) / std::sqrt(static_cast<double>(v.size()));
  EXPECT_NEAR(accuracy(v).stderr_, want, 1e-12);
  EXPECT_EQ(accuracy({}).n, 0);
  EXPECT_EQ(accuracy({true}).stderr_, 0);
  EXPECT_THROW(parse_eval_mode("mmlu"), Error);
}

}  // namespace
}  // namespace gs::bench
