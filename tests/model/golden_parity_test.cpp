// Parity of the CPU forward pass with the Hugging Face reference on every golden fixture, in the
// three ways the engine computes logits: one prefill, chunks that split sliding windows and pages,
// and token-by-token decode (with sliding pages freed and reused as the window moves).
//
// Tolerance: both sides compute in f32 from the same bf16/f16 weights, so the logits differ only
// by rounding order (observed max |Δ| below 1e-4). We assert max |Δlogit| <= 2e-3, top-1 equal
// wherever the reference's top-2 margin exceeds 1e-2, and the greedy continuation token for token.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "golden.h"
#include "runner/sequence_runner.h"

namespace gs::test {
namespace {

constexpr float kMaxAbsDiff = 2e-3f;
constexpr float kClearMargin = 1e-2f;

struct ParityCase {
  std::string combo;
  LogitsMode mode;
  int chunk;
  int page_size;
};

void PrintTo(const ParityCase& c, std::ostream* os) {
  *os << c.combo << " mode " << int(c.mode) << " chunk " << c.chunk << " page " << c.page_size;
}

std::string case_name(const testing::TestParamInfo<ParityCase>& info) {
  const char* m = info.param.mode == LogitsMode::Prefill ? "prefill" : info.param.mode == LogitsMode::Decode ? "decode"
                                                                                                              : "chunked";
  return info.param.combo + "_" + m;
}

class GoldenParity : public testing::TestWithParam<ParityCase> {};

TEST_P(GoldenParity, LogitsMatchReference) {
  const ParityCase& pc = GetParam();
  const Golden g = load_golden(pc.combo);
  LoadedModel m = load_cpu_model(pc.combo);
  ASSERT_EQ(m.model->config().vocab_size, g.vocab);

  SequenceRunOptions opt;
  opt.mode = pc.mode;
  opt.chunk = pc.chunk;
  opt.page_size = pc.page_size;
  const std::vector<float> logits = sequence_logits(*m.model, g.tokens, opt);
  ASSERT_EQ(logits.size(), g.logits.size());

  const int T = int(g.tokens.size()), V = g.vocab;
  float max_diff = 0;
  int worst_row = -1, checked_top1 = 0;
  for (int t = 0; t < T; ++t) {
    const float* ours = logits.data() + size_t(t) * V;
    const float* ref = g.logits.data() + size_t(t) * V;
    for (int v = 0; v < V; ++v) {
      ASSERT_TRUE(std::isfinite(ours[v])) << "row " << t << " token " << v;
      const float d = std::fabs(ours[v] - ref[v]);
      if (d > max_diff) {
        max_diff = d;
        worst_row = t;
      }
    }
    std::vector<int> order(static_cast<size_t>(V));
    for (int v = 0; v < V; ++v) order[size_t(v)] = v;
    std::partial_sort(order.begin(), order.begin() + 2, order.end(), [&](int a, int b) { return ref[a] > ref[b]; });
    if (ref[order[0]] - ref[order[1]] > kClearMargin) {
      ++checked_top1;
      const int ours_top = int(std::max_element(ours, ours + V) - ours);
      EXPECT_EQ(ours_top, order[0]) << "row " << t << ": reference margin " << ref[order[0]] - ref[order[1]];
    }
  }
  EXPECT_LE(max_diff, kMaxAbsDiff) << "worst row " << worst_row;
  EXPECT_GT(checked_top1, T / 2) << "too few rows with a clear reference top-1 to mean anything";
  RecordProperty("max_abs_diff", std::to_string(max_diff));
}

TEST_P(GoldenParity, GreedyContinuationMatchesReference) {
  const ParityCase& pc = GetParam();
  const Golden g = load_golden(pc.combo);
  LoadedModel m = load_cpu_model(pc.combo);
  SequenceRunOptions opt;
  opt.mode = pc.mode;
  opt.chunk = pc.chunk;
  opt.page_size = pc.page_size;
  EXPECT_EQ(greedy_continuation(*m.model, g.tokens, int(g.generated.size()), opt), g.generated);
}

std::vector<ParityCase> all_cases() {
  std::vector<ParityCase> cases;
  for (const std::string& c : golden_combos()) {
    cases.push_back({c, LogitsMode::Prefill, 0, 16});
    // Chunks of 5 with pages of 4: chunk, page and window boundaries all fall in different places.
    cases.push_back({c, LogitsMode::Chunked, 5, 4});
    cases.push_back({c, LogitsMode::Decode, 0, 8});
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, GoldenParity, testing::ValuesIn(all_cases()), case_name);

}  // namespace
}  // namespace gs::test
