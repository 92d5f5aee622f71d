// Decode steps replayed from CUDA graphs compute what the same steps run eagerly compute: ragged
// batches padded to graph buckets, contexts crossing context buckets and page boundaries, sliding
// pages already freed, a dense model (with PLE and KV sharing) and a MoE one; and the model runner
// routes exactly the decode-only steps to its graphs.
#include <gtest/gtest.h>

#include <random>

#include "backend_harness.h"
#include "model/dummy_weights.h"
#include "model/presets.h"
#include "runner/batch_builder.h"
#include "runner/decode_graphs.h"
#include "runner/model_runner.h"

namespace gs::test {
namespace {

// A small MoE shape from the 26B-A4B preset: few layers, few experts.
ModelConfig small_moe_config() {
  nlohmann::json j = preset_config_json("26b-a4b");
  nlohmann::json& t = j["text_config"];
  t["hidden_size"] = 256;
  t["num_hidden_layers"] = 4;
  t["intermediate_size"] = 256;
  t["num_attention_heads"] = 4;
  t["num_key_value_heads"] = 2;
  t["num_global_key_value_heads"] = 1;
  t["num_experts"] = 16;
  t["top_k_experts"] = 4;
  t["moe_intermediate_size"] = 128;
  t["vocab_size"] = 4096;
  t["sliding_window"] = 64;
  t["layer_types"] = {"sliding_attention", "sliding_attention", "sliding_attention", "full_attention"};
  return ModelConfig::from_json(j);
}

struct Fixture {
  std::unique_ptr<Backend> be;
  std::unique_ptr<Gemma4Model> model;
  KvCache cache;
  int page_size = 16;
  int window = 0;
  int pages_per_seq = 0;
};

// Sequences s of the test each own pages [s * pages_per_seq, (s + 1) * pages_per_seq) of both pools.
Fixture make_fixture(ModelConfig cfg, int max_seqs, int max_len) {
  Fixture f;
  f.be = make_cuda_backend(0);
  for (const auto& l : cfg.layers) f.window = std::max(f.window, l.sliding_window);
  f.model = std::make_unique<Gemma4Model>(cfg, make_dummy_weights(cfg, *f.be, 7), *f.be);
  f.model->reserve(64, 64);
  f.pages_per_seq = (max_len + f.page_size - 1) / f.page_size;
  int pages[kNumKvGroups];
  for (int g = 0; g < kNumKvGroups; ++g) pages[g] = cfg.num_cache_layers(KvGroup(g)) > 0 ? max_seqs * f.pages_per_seq : 0;
  f.cache = f.be->allocate_kv_cache(cfg.kv_layout(), f.page_size, pages);
  for (auto& pool : f.cache.pools) {
    if (pool.k.defined()) f.be->fill_uniform(pool.k, 3, 1.f);
    if (pool.v.defined()) f.be->fill_uniform(pool.v, 4, 1.f);
  }
  return f;
}

// Page tables of a sequence at `len` tokens; sliding pages wholly outside the window are -1.
void tables_for(const Fixture& f, int seq, int len, std::vector<int> tables[kNumKvGroups]) {
  for (int g = 0; g < kNumKvGroups; ++g) {
    tables[g].clear();
    if (f.cache.pools[g].cache_layers == 0) continue;
    for (int p = 0; p * f.page_size < len; ++p) tables[g].push_back(seq * f.pages_per_seq + p);
    if (g == int(KvGroup::Sliding) && f.window > 0)
      for (int p = 0; (p + 1) * f.page_size <= len - f.window; ++p) tables[g][size_t(p)] = -1;
  }
}

std::vector<float> logits_of(Backend& be, const Tensor& logits, int rows) {
  Tensor r = logits.slice(0, rows);
  std::vector<float> h(static_cast<size_t>(r.numel()));
  be.copy_to_host(r, h.data());
  return h;
}

double rel_err(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(a[i]) || !std::isfinite(b[i])) return INFINITY;
    num += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    den += double(b[i]) * b[i];
  }
  return std::sqrt(num / std::max(den, 1e-30));
}

// Two properties per step: a replay computes exactly (bitwise) what the eager run of the same padded
// step computed; and the padded step's rows agree with the unpadded eager step. The second is only
// as tight as batch invariance allows: GEMMs of 3 and 4 rows may pick different algorithms, and in a
// MoE model a one-ulp change can flip a near-tied router choice, so it is checked for the MoE
// model only where no padding was needed.
// q_len > 1: speculative verify steps (every sequence brings its newest token and q_len - 1 drafts).
void check_graph_matches_eager(ModelConfig cfg, int q_len = 1) {
  const int max_len = 700;
  Fixture f = make_fixture(cfg, 20, max_len);
  DecodeGraphs graphs(*f.model, f.cache, f.page_size, DecodeGraphOptions{20, max_len, q_len, 64});
  std::mt19937 rng(12345);
  // Batch sizes that fill a bucket exactly and ones that need padding; contexts on both sides of
  // the 256 / 512 context buckets and of page boundaries; repeated shapes replay the graph.
  const std::vector<std::pair<int, int>> shapes = {{1, 5},   {3, 40},  {3, 41},  {5, 255}, {5, 256},
                                                   {9, 300}, {17, 16}, {20, 600}, {9, 301}, {1, 699}};
  int replays_expected = 0;
  for (auto [n, base_len] : shapes) {
    if (graphs.bucket_rows(n) * q_len > 64) continue;  // beyond the rows the model reserved
    const int rows_n = n * q_len;
    std::vector<std::vector<int>> tables(static_cast<size_t>(n) * kNumKvGroups);
    std::vector<SequenceStep> steps(static_cast<size_t>(n));
    std::vector<int> ids(static_cast<size_t>(rows_n));
    for (int s = 0; s < n; ++s) {
      const int cached = std::max(0, std::min(base_len, max_len - q_len) - int(rng() % 7));  // ragged contexts
      std::vector<int>* t = &tables[size_t(s) * kNumKvGroups];
      tables_for(f, s, cached + q_len, t);
      steps[size_t(s)].start = cached;
      steps[size_t(s)].q_len = q_len;
      for (int g = 0; g < kNumKvGroups; ++g)
        if (!t[g].empty()) steps[size_t(s)].page_table[g] = &t[g];
      for (int r = 0; r < q_len; ++r) ids[size_t(s * q_len + r)] = int(rng() % uint32_t(cfg.vocab_size));
    }
    ASSERT_TRUE(graphs.accepts(steps));
    const int before = graphs.num_graphs();
    ForwardOutput g_out = graphs.forward(steps, ids);
    const bool replayed = graphs.num_graphs() == before;
    replays_expected += replayed;
    std::vector<float> from_graph = logits_of(*f.be, g_out.logits, rows_n);
    // The same step again is certainly a replay (it rewrites the same K/V values).
    std::vector<float> again = logits_of(*f.be, graphs.forward(steps, ids).logits, rows_n);
    EXPECT_EQ(graphs.num_graphs(), before + !replayed);
    EXPECT_EQ(again, from_graph) << n << " sequences at ~" << base_len << ": replay differs from the first run";
    if (cfg.moe && graphs.bucket_rows(n) != n) continue;

    // The same step eagerly (it rewrites the same K/V values at the same slots).
    Tensor ids_t = f.be->empty(DType::I32, Shape{rows_n});
    f.be->copy_from_host(ids_t, ids.data());
    std::vector<int> rows(static_cast<size_t>(rows_n));
    for (int r = 0; r < rows_n; ++r) rows[size_t(r)] = r;
    Tensor rows_t = f.be->empty(DType::I32, Shape{rows_n});
    f.be->copy_from_host(rows_t, rows.data());
    AttentionBatch batch = build_attention_batch(*f.be, steps, f.page_size);
    ForwardOutput e_out = f.model->forward(ids_t, batch, f.cache, rows_t);
    std::vector<float> eager = logits_of(*f.be, e_out.logits, rows_n);
    EXPECT_LT(rel_err(from_graph, eager), 2e-2) << n << " sequences at ~" << base_len
                                                << (replayed ? " (replayed)" : " (captured)");
  }
  EXPECT_GE(replays_expected, 1) << "no shape was replayed: every step captured a new graph";
  EXPECT_LT(graphs.num_graphs(), int(shapes.size()));
}

class DecodeGraphsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  }
};

TEST_F(DecodeGraphsTest, DenseReplayMatchesEager) { check_graph_matches_eager(preset_config("demo")); }

TEST_F(DecodeGraphsTest, MoeReplayMatchesEager) { check_graph_matches_eager(small_moe_config()); }

TEST_F(DecodeGraphsTest, VerifyStepsReplayMatchesEager) {
  check_graph_matches_eager(preset_config("demo"), 4);
  check_graph_matches_eager(preset_config("demo"), 2);
}

TEST_F(DecodeGraphsTest, MoeVerifyStepsReplayMatchesEager) { check_graph_matches_eager(small_moe_config(), 3); }

TEST_F(DecodeGraphsTest, BucketsPadUpAndStopAtTheLimits) {
  Fixture f = make_fixture(preset_config("demo"), 4, 1000);
  DecodeGraphs graphs(*f.model, f.cache, f.page_size, DecodeGraphOptions{20, 1000});
  EXPECT_EQ(graphs.bucket_rows(1), 1);
  EXPECT_EQ(graphs.bucket_rows(3), 4);
  EXPECT_EQ(graphs.bucket_rows(9), 16);
  EXPECT_EQ(graphs.bucket_rows(19), 20);  // the last bucket is max_batch itself
  EXPECT_EQ(graphs.bucket_context(1), 256);
  EXPECT_EQ(graphs.bucket_context(257), 512);
  EXPECT_EQ(graphs.bucket_context(999), 1008);  // the model length, rounded up to pages
  std::vector<int> table = {0};
  SequenceStep prefill;
  prefill.q_len = 4;
  prefill.page_table[0] = prefill.page_table[1] = &table;
  EXPECT_FALSE(graphs.accepts({prefill}));
  SequenceStep too_long = prefill;
  too_long.q_len = 1;
  too_long.start = 1000;
  EXPECT_FALSE(graphs.accepts({too_long}));
}

TEST_F(DecodeGraphsTest, RunnerUsesGraphsOnlyForDecodeSteps) {
  ModelConfig cfg = preset_config("demo");
  Fixture f = make_fixture(cfg, 4, 256);
  ModelRunner runner(*f.model, f.cache, f.page_size, 64, 64, DecodeGraphOptions{8, 256});
  std::vector<int> tokens = {5, 6, 7, 8, 9, 10, 11, 12};
  std::vector<int> tables[kNumKvGroups];
  tables_for(f, 0, 64, tables);
  SequenceStep s;
  s.tokens = &tokens;
  s.start = 0;
  s.q_len = 8;  // prefill: eager
  s.sample = true;
  for (int g = 0; g < kNumKvGroups; ++g)
    if (!tables[g].empty()) s.page_table[g] = &tables[g];
  runner.launch({s});
  tokens.push_back(runner.collect()[0].tokens.at(0));
  for (int i = 0; i < 5; ++i) {  // decode: the first step captures, the rest replay
    s.start = int(tokens.size()) - 1;
    s.q_len = 1;
    runner.launch({s});
    tokens.push_back(runner.collect()[0].tokens.at(0));
  }
  s.start = int(tokens.size()) - 1;
  s.prompt_logprob_rows = 0;
  s.logprobs = 3;  // top logprobs still come from a graph step
  runner.launch({s});
  EXPECT_EQ(runner.collect()[0].top.at(0).size(), 3u);
  const ModelRunner::Counters c = runner.counters();
  EXPECT_EQ(c.eager_steps, 1u);
  EXPECT_EQ(c.graph_steps, 6u);
  EXPECT_EQ(c.graphs, 1);
}

// Overlapped steps: step k+1 is launched before step k is collected, its input ids copied from step
// k's sampled ids on the device (SequenceStep::feedback_row). The tokens are those of steps run one
// at a time, from graphs and eagerly, with a step in flight that samples rows in another order.
TEST_F(DecodeGraphsTest, OverlappedStepsFeedSampledIdsOnTheDevice) {
  ModelConfig cfg = preset_config("demo");
  for (bool graphs : {true, false}) {
    SCOPED_TRACE(graphs ? "graphs" : "eager");
    Fixture f = make_fixture(cfg, 3, 256);
    ModelRunner runner(*f.model, f.cache, f.page_size, 64, 64, DecodeGraphOptions{graphs ? 8 : 0, 256});
    const int n = 3, steps = 12;
    std::vector<std::vector<int>> prompts = {{5, 6, 7, 8, 9}, {11, 12, 13}, {20, 21, 22, 23, 24, 25, 26}};
    std::vector<std::vector<int>> tables(size_t(n) * kNumKvGroups);
    for (int s = 0; s < n; ++s) tables_for(f, s, 64, &tables[size_t(s) * kNumKvGroups]);
    auto seq = [&](std::vector<int>& tokens, int s, int start, int q_len) {
      SequenceStep r;
      r.tokens = &tokens;
      r.start = start;
      r.q_len = q_len;
      r.sample = true;
      for (int g = 0; g < kNumKvGroups; ++g)
        if (!tables[size_t(s) * kNumKvGroups + g].empty()) r.page_table[g] = &tables[size_t(s) * kNumKvGroups + g];
      return r;
    };

    // One step at a time: the host appends each sampled token before the next launch.
    std::vector<std::vector<int>> serial = prompts;
    std::vector<SequenceStep> batch;
    for (int s = 0; s < n; ++s) batch.push_back(seq(serial[size_t(s)], s, 0, int(prompts[size_t(s)].size())));
    for (int k = 0; k <= steps; ++k) {
      runner.launch(batch);
      std::vector<RunnerOutput> out = runner.collect();
      batch.clear();
      for (int s = 0; s < n; ++s) {
        serial[size_t(s)].push_back(out[size_t(s)].tokens.at(0));
        batch.push_back(seq(serial[size_t(s)], s, int(serial[size_t(s)].size()) - 1, 1));
      }
    }

    // Overlapped: placeholders on the host, ids fed on the device. Sequences are listed in reverse
    // order from step 1 on, so a feedback row is not simply the sequence's row.
    std::vector<std::vector<int>> ahead = prompts;
    batch.clear();
    for (int s = 0; s < n; ++s) batch.push_back(seq(ahead[size_t(s)], s, 0, int(prompts[size_t(s)].size())));
    runner.launch(batch);
    std::vector<int> row_of(n);  // sampled row of each sequence in the step in flight
    for (int s = 0; s < n; ++s) row_of[size_t(s)] = s;
    for (int k = 1; k <= steps + 1; ++k) {
      ASSERT_TRUE(runner.can_launch_ahead());
      std::vector<int> prev_row = row_of;
      if (k <= steps) {
        batch.clear();
        for (int i = 0; i < n; ++i) {
          const int s = n - 1 - i;
          ahead[size_t(s)].push_back(0);  // placeholder
          SequenceStep r = seq(ahead[size_t(s)], s, int(ahead[size_t(s)].size()) - 1, 1);
          r.feedback_row = prev_row[size_t(s)];
          batch.push_back(r);
          row_of[size_t(s)] = i;
        }
        runner.launch(batch);
        EXPECT_EQ(runner.steps_in_flight(), 2);
      }
      std::vector<RunnerOutput> out = runner.collect();
      // The collected step's tokens: the placeholders the step in flight was launched with.
      for (int s = 0; s < n; ++s) {
        const int tok = out[size_t(k == 1 ? s : n - 1 - s)].tokens.at(0);
        if (k <= steps)
          ahead[size_t(s)].back() = tok;
        else
          ahead[size_t(s)].push_back(tok);
      }
    }
    EXPECT_EQ(runner.steps_in_flight(), 0);
    for (int s = 0; s < n; ++s) EXPECT_EQ(ahead[size_t(s)], serial[size_t(s)]) << "sequence " << s;
  }
}

}  // namespace
}  // namespace gs::test
