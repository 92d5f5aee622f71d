// The batch-invariant kernel policy on cuda (--enable-deterministic-inference), on the fixture
// models: one token's logits have the same bits whether its row is computed in a prefill, a verify
// chunk or a decode step, and greedy serving with drafts (the MTP drafter or scripted ones) emits
// exactly the tokens of greedy serving without them, with chunked prefill, prefix hits and
// preemption in the mix. No tie allowance: that is what the policy is for. Skips without a GPU.
#include <gtest/gtest.h>

#include <cstring>

#include "../engine/speculative_pairs.h"
#include "kernels/backends.h"
#include "model/dummy_weights.h"
#include "runner/sequence_runner.h"

namespace gs {
namespace {

std::unique_ptr<Backend> cuda_backend(bool batch_invariant) {
  BackendOptions o;
  o.kernels.batch_invariant = batch_invariant;
  return create_backend("cuda", o);
}

void expect_equal_tokens(const Result& got, const Result& want, const std::string& id) {
  EXPECT_EQ(got.tokens, want.tokens) << id;
  EXPECT_EQ(got.finish, want.finish) << id;
}

// Requests of `want` whose tokens `got` does not reproduce exactly.
int differing(const std::map<std::string, Result>& got, const std::map<std::string, Result>& want) {
  int n = 0;
  for (const auto& [id, r] : want) n += got.at(id).tokens != r.tokens;
  return n;
}

#define SKIP_WITHOUT_GPU() \
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device"

std::string golden_target(const std::string& kind) { return std::string(GS_SOURCE_DIR) + "/fixtures/golden/" + kind; }

// One sequence stepped as prefill + verify-sized chunks + decode steps gives every row the bits
// of the same row in one whole prefill.
class InvariantRows : public testing::TestWithParam<std::string> {};

TEST_P(InvariantRows, PrefillVerifyAndDecodeRowsAgreeBitForBit) {
  SKIP_WITHOUT_GPU();
  Pair p = load_target(golden_target(GetParam()), cuda_backend(true));
  Gemma4Model& model = *p.target;
  const int V = model.config().vocab_size;
  std::mt19937 rng(7);
  std::vector<int> tokens(48);  // past the fixtures' sliding windows
  for (int& t : tokens) t = 3 + int(rng() % uint32_t(V - 3));
  tokens[0] = 2;
  SequenceRunner whole(model, 64, 64, 8);
  const std::vector<float> ref = whole.step(tokens);
  SequenceRunner stepped(model, 64, 64, 8);
  std::vector<float> got;
  size_t at = 0;
  for (int n : {20, 4, 1, 1, 5, 1, 3, 1, 1, 8, 2, 1}) {
    const std::vector<int> chunk(tokens.begin() + long(at), tokens.begin() + long(at + size_t(n)));
    const std::vector<float> l = stepped.step(chunk);
    got.insert(got.end(), l.begin(), l.end());
    at += size_t(n);
  }
  ASSERT_EQ(at, tokens.size());
  ASSERT_EQ(got.size(), ref.size());
  for (size_t r = 0; r < tokens.size(); ++r)
    EXPECT_EQ(std::memcmp(got.data() + r * size_t(V), ref.data() + r * size_t(V), size_t(V) * sizeof(float)), 0)
        << GetParam() << ": row " << r << " differs from the whole prefill's";
}

INSTANTIATE_TEST_SUITE_P(Fixtures, InvariantRows, testing::Values("dense", "e2b_like", "k_eq_v", "moe"));

// An MTP pair whose matmuls the batch-invariant GEMV takes (K a multiple of 8). The draft_golden
// E2B-like and MoE targets have hidden size 36, so for those kinds: the golden target of the kind
// (hidden 64 / 48) and the draft_golden assistant's shape bound to it, dummy weights (exactness
// needs a drafter of the right shapes, not a good one). The other pairs as they are.
Pair aligned_pair(const std::string& kind, std::unique_ptr<Backend> backend) {
  if (kind != "e2b_like" && kind != "moe") return load_pair(kind, DraftConvention::Transformers, std::move(backend));
  Pair p = load_target(golden_target(kind), std::move(backend));
  auto ack = Checkpoint::open(std::string(GS_SOURCE_DIR) + "/fixtures/draft_golden/" + kind + "/assistant");
  nlohmann::json j = ack->config_json();
  j["backbone_hidden_size"] = p.target->config().hidden_size;
  ModelConfig acfg = ModelConfig::from_json(j);
  ModelWeights aw = make_dummy_weights(acfg, *p.backend, 5);
  acfg.bind_assistant_to(p.target->config());
  p.drafter = std::make_shared<Gemma4Drafter>(acfg, std::move(aw), *p.target, *p.backend,
                                              DraftConvention::Transformers);
  return p;
}

struct Case {
  std::string pair;
  int max_num_seqs, batched_tokens, k;
  size_t kv_bytes;
  bool eager = false;  // no CUDA graphs
};

// The MTP drafter pairs of fixtures/draft_golden (E2B-like and MoE rebuilt for cuda: aligned_pair).
class SpeculativeCuda : public testing::TestWithParam<Case> {};

TEST_P(SpeculativeCuda, GreedyOutputIsExactlyTheSameWithAndWithoutDrafts) {
  SKIP_WITHOUT_GPU();
  const Case& c = GetParam();
  const Workload w = make_workload(24, 11);
  EngineOptions plain = options(c.max_num_seqs, c.batched_tokens, c.kv_bytes);
  plain.enforce_eager = c.eager;
  for (bool invariant : {true, false}) {
    Pair p = aligned_pair(c.pair, cuda_backend(invariant));
    const DraftedRuns r = run_with_and_without_drafter(p, w, plain, c.k);
    const auto& want = r.plain;
    const auto& got = r.drafted;
    const EngineStats& stats = r.stats;
    if (!invariant) {
      // The default policy, for the record: verify rows take other kernels than decode rows.
      std::printf("%s, default kernel policy: %d of %zu requests differ with drafts\n", c.pair.c_str(),
                  differing(got, want), want.size());
      continue;
    }
    for (const auto& [id, ref] : want) expect_equal_tokens(got.at(id), ref, c.pair + " " + id);
    EXPECT_GT(stats.spec_drafts, 0u);
    std::printf("%s, batch invariant: %llu rounds, %llu drafts, %llu accepted, %llu preemptions\n", c.pair.c_str(),
                (unsigned long long)stats.spec_drafts, (unsigned long long)stats.spec_draft_tokens,
                (unsigned long long)stats.spec_accepted_tokens, (unsigned long long)stats.preemptions);
  }
}

INSTANTIATE_TEST_SUITE_P(Pairs, SpeculativeCuda,
                         testing::Values(Case{"dense", 8, 64, 3, 0}, Case{"e2b_like", 8, 64, 4, 0},
                                         Case{"k_eq_v", 4, 16, 2, 0}, Case{"moe", 8, 64, 3, 0},
                                         // Batch 1 (one request at a time), with and without CUDA graphs.
                                         Case{"e2b_like", 1, 64, 3, 0}, Case{"e2b_like", 1, 64, 3, 0, true},
                                         Case{"moe", 1, 64, 3, 0},
                                         // Chunked prefill, verifies cut short, preemption.
                                         Case{"dense", 6, 12, 3, 1536 * 1024}, Case{"e2b_like", 6, 12, 3, 1536 * 1024}),
                         [](const auto& info) {
                           return info.param.pair + "_" + std::to_string(info.param.batched_tokens) + "_k" +
                                  std::to_string(info.param.k) + (info.param.kv_bytes ? "_small_kv" : "") +
                                  (info.param.max_num_seqs == 1 ? "_batch1" : "") + (info.param.eager ? "_eager" : "");
                         });

// Every golden fixture kind (dense, KV-shared, K=V, MoE) with drafts scripted from the reference
// run (all right, one in three wrong): accepted runs of several tokens, bonus tokens, rejections,
// at batch 8 and with a small pool and token budget (chunked prefill and preemption).
class ScriptedCuda : public testing::TestWithParam<std::string> {};

TEST_P(ScriptedCuda, AcceptedRunsKeepGreedyOutputExact) {
  SKIP_WITHOUT_GPU();
  Pair p = load_target(golden_target(GetParam()), cuda_backend(true));
  const Workload w = make_workload(24, 5);
  for (auto [batched, kv] : {std::pair<int, size_t>{64, 0}, {12, 1536 * 1024}}) {
    SCOPED_TRACE("batched tokens " + std::to_string(batched) + ", kv bytes " + std::to_string(kv));
    const EngineOptions plain = options(8, batched, kv);
    const auto want = run(p, w, plain);
    for (int wrong_every : {1000000, 3}) {
      SCOPED_TRACE("one draft in " + std::to_string(wrong_every) + " wrong");
      EngineStats stats;
      run_scripted_exact(p, w, plain, want, 4, wrong_every, &stats, expect_equal_tokens);
      EXPECT_GT(stats.spec_accepted_tokens, stats.spec_draft_tokens / 4) << "the script's drafts are mostly right";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ScriptedCuda, testing::Values("dense", "e2b_like", "k_eq_v", "moe"));

}  // namespace
}  // namespace gs
