// validate_request, rule by rule: for each, the value at the boundary is accepted and the one just
// past it is refused with that rule's param; problems come in the documented order.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "engine/request_validation.h"

namespace gs {
namespace {

constexpr int kVocab = 100;
const RequestLimits kLimits{kVocab, 64, 8};

// A request every rule accepts: 4 prompt tokens, 10 new ones.
GenerationRequest valid() {
  GenerationRequest r;
  r.id = "r";
  r.prompt = {1, 2, 3, 4};
  r.sampling.max_tokens = 10;
  return r;
}

using Edit = std::function<void(GenerationRequest&)>;

std::optional<RequestProblem> check(const Edit& edit) {
  GenerationRequest r = valid();
  edit(r);
  return validate_request(r, kLimits);
}

// `ok` is accepted; `bad` is refused naming `param`.
void expect_boundary(const char* param, const Edit& ok, const Edit& bad) {
  auto accepted = check(ok);
  EXPECT_FALSE(accepted) << param << ": refused at the boundary: " << accepted->message();
  auto refused = check(bad);
  ASSERT_TRUE(refused) << param << ": accepted past the boundary";
  EXPECT_EQ(refused->param, param) << refused->message();
  EXPECT_EQ(refused->message(), refused->param + ": " + refused->detail);
}

TEST(RequestValidation, AValidRequestPasses) { EXPECT_FALSE(validate_request(valid(), kLimits)); }

TEST(RequestValidation, SamplingRanges) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  expect_boundary("temperature", [](auto& r) { r.sampling.temperature = 2; },
                  [](auto& r) { r.sampling.temperature = 2.01f; });
  expect_boundary("temperature", [](auto& r) { r.sampling.temperature = 0; },
                  [](auto& r) { r.sampling.temperature = -0.01f; });
  expect_boundary("temperature", [](auto& r) { r.sampling.temperature = 1; },
                  [&](auto& r) { r.sampling.temperature = nan; });
  expect_boundary("top_p", [](auto& r) { r.sampling.top_p = 1; }, [](auto& r) { r.sampling.top_p = 1.01f; });
  expect_boundary("top_p", [](auto& r) { r.sampling.top_p = 1e-6f; }, [](auto& r) { r.sampling.top_p = 0; });
  expect_boundary("top_k", [](auto& r) { r.sampling.top_k = 0; }, [](auto& r) { r.sampling.top_k = -1; });
  expect_boundary("min_p", [](auto& r) { r.sampling.min_p = 1; }, [](auto& r) { r.sampling.min_p = 1.01f; });
  expect_boundary("min_p", [](auto& r) { r.sampling.min_p = 0; }, [](auto& r) { r.sampling.min_p = -0.01f; });
  expect_boundary("presence_penalty", [](auto& r) { r.sampling.presence_penalty = 2; },
                  [](auto& r) { r.sampling.presence_penalty = 2.01f; });
  expect_boundary("presence_penalty", [](auto& r) { r.sampling.presence_penalty = -2; },
                  [](auto& r) { r.sampling.presence_penalty = -2.01f; });
  expect_boundary("frequency_penalty", [](auto& r) { r.sampling.frequency_penalty = 2; },
                  [](auto& r) { r.sampling.frequency_penalty = 2.01f; });
  expect_boundary("frequency_penalty", [](auto& r) { r.sampling.frequency_penalty = -2; },
                  [](auto& r) { r.sampling.frequency_penalty = -2.01f; });
  expect_boundary("repetition_penalty", [](auto& r) { r.sampling.repetition_penalty = 10; },
                  [](auto& r) { r.sampling.repetition_penalty = 10.01f; });
  expect_boundary("repetition_penalty", [](auto& r) { r.sampling.repetition_penalty = 1e-3f; },
                  [](auto& r) { r.sampling.repetition_penalty = 0; });
  expect_boundary("repetition_penalty", [](auto& r) { r.sampling.repetition_penalty = 1; },
                  [&](auto& r) { r.sampling.repetition_penalty = inf; });
}

TEST(RequestValidation, TokenIdsAreInTheVocabulary) {
  expect_boundary("logit_bias", [](auto& r) { r.sampling.logit_bias = {{0, 1.f}, {kVocab - 1, 1.f}}; },
                  [](auto& r) { r.sampling.logit_bias = {{0, 1.f}, {kVocab, 1.f}}; });
  expect_boundary("logit_bias", [](auto& r) { r.sampling.logit_bias = {{0, 1.f}}; },
                  [](auto& r) { r.sampling.logit_bias = {{-1, 1.f}}; });
  expect_boundary("stop_token_ids", [](auto& r) { r.sampling.stop_token_ids = {0, kVocab - 1}; },
                  [](auto& r) { r.sampling.stop_token_ids = {kVocab}; });
  expect_boundary("stop_token_ids", [](auto& r) { r.sampling.stop_token_ids = {0}; },
                  [](auto& r) { r.sampling.stop_token_ids = {-1}; });
  expect_boundary("prompt", [](auto& r) { r.prompt = {0, kVocab - 1}; }, [](auto& r) { r.prompt = {0, kVocab}; });
  expect_boundary("prompt", [](auto& r) { r.prompt = {0}; }, [](auto& r) { r.prompt = {5, -1}; });
  auto p = check([](auto& r) { r.prompt = {5, 6, kVocab}; });
  ASSERT_TRUE(p);
  EXPECT_EQ(p->detail, "token id 100 at position 2 is outside the vocabulary [0, 100)");
}

TEST(RequestValidation, LogitBiasValues) {
  expect_boundary("logit_bias", [](auto& r) { r.sampling.logit_bias = {{7, 100.f}, {8, -100.f}}; },
                  [](auto& r) { r.sampling.logit_bias = {{7, 100.f}, {8, -100.5f}}; });
  expect_boundary("logit_bias", [](auto& r) { r.sampling.logit_bias = {{7, 100.f}}; },
                  [](auto& r) { r.sampling.logit_bias = {{7, 100.5f}}; });
  expect_boundary("logit_bias", [](auto& r) { r.sampling.logit_bias = {{7, 0.f}}; },
                  [](auto& r) { r.sampling.logit_bias = {{7, std::numeric_limits<float>::infinity()}}; });
}

TEST(RequestValidation, Logprobs) {
  expect_boundary("logprobs", [](auto& r) { r.sampling.logprobs = kMaxTopLogprobs; },
                  [](auto& r) { r.sampling.logprobs = kMaxTopLogprobs + 1; });
  expect_boundary("logprobs", [](auto& r) { r.sampling.logprobs = -1; },  // none
                  [](auto& r) { r.sampling.logprobs = -2; });
}

TEST(RequestValidation, PromptAndLengths) {
  // The prompt plus at least one new token fits: 63 + 1 = 64.
  expect_boundary("prompt", [](auto& r) { r.prompt.assign(63, 1), r.sampling.max_tokens = 1; },
                  [](auto& r) { r.prompt.assign(64, 1), r.sampling.max_tokens = 1; });
  expect_boundary("prompt", [](auto& r) { r.prompt = {1}; }, [](auto& r) { r.prompt.clear(); });
  expect_boundary("max_tokens", [](auto& r) { r.sampling.max_tokens = 1; }, [](auto& r) { r.sampling.max_tokens = 0; });
  expect_boundary("max_tokens", [](auto& r) { r.sampling.max_tokens = 60; },
                  [](auto& r) { r.sampling.max_tokens = 61; });
  expect_boundary("min_tokens", [](auto& r) { r.sampling.min_tokens = 10; },
                  [](auto& r) { r.sampling.min_tokens = 11; });
  expect_boundary("min_tokens", [](auto& r) { r.sampling.min_tokens = 0; },
                  [](auto& r) { r.sampling.min_tokens = -1; });
  // Both numbers are in the message, as a client needs them to fix the request.
  auto p = check([](auto& r) { r.prompt.assign(70, 1); });
  ASSERT_TRUE(p);
  EXPECT_EQ(p->param, "prompt");
  EXPECT_NE(p->detail.find("70 tokens"), std::string::npos) << p->detail;
  EXPECT_NE(p->detail.find(" 64 "), std::string::npos) << p->detail;
}

TEST(RequestValidation, ImageBlocks) {
  // One entry per prompt token.
  expect_boundary("mm_block", [](auto& r) { r.mm_block = {-1, -1, -1, -1}; },
                  [](auto& r) { r.mm_block = {-1, -1, -1}; });
  // An image (a run of one block id) of at most max_image_tokens soft tokens: 8 fit, 9 do not.
  expect_boundary("mm_block",
                  [](auto& r) {
                    r.prompt.assign(10, 1);
                    r.mm_block = {-1, 0, 0, 0, 0, 0, 0, 0, 0, -1};
                  },
                  [](auto& r) {
                    r.prompt.assign(10, 1);
                    r.mm_block = {-1, 0, 0, 0, 0, 0, 0, 0, 0, 0};
                  });
  // Two images of 8 each, back to back, are two runs.
  EXPECT_FALSE(check([](auto& r) {
    r.prompt.assign(16, 1);
    r.mm_block = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1};
  }));
}

// Sampling values first, then the prompt, then the lengths: a request left without max_tokens by
// the API gets what the model length leaves (nothing, for a prompt that is too long), and must
// hear about the prompt, not about a max_tokens it never sent.
TEST(RequestValidation, FirstProblemInOrder) {
  auto p = check([](auto& r) {
    r.sampling.temperature = 3;
    r.prompt.assign(70, kVocab);
  });
  ASSERT_TRUE(p);
  EXPECT_EQ(p->param, "temperature");
  p = check([](auto& r) {
    r.prompt.assign(70, 1);
    r.sampling.max_tokens = 64 - 70;
    r.sampling.min_tokens = 3;
  });
  ASSERT_TRUE(p);
  EXPECT_EQ(p->param, "prompt");
}

}  // namespace
}  // namespace gs
