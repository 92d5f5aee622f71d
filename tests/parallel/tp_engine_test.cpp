// The engine serving a tensor-parallel model (cpu ranks): rank 0's runner drives every rank, and
// greedy outputs equal one device's, for several requests batched and chunked together, with
// overlapped scheduling (steps launched ahead read their input ids from the step in flight on
// every rank: rank 0's sampled ids are broadcast) and without.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>

#include "engine/engine.h"
#include "runner/tensor_parallel_model.h"

namespace gs {
namespace {

std::string golden_dir(const std::string& combo) { return std::string(GS_SOURCE_DIR) + "/fixtures/golden/" + combo; }

std::vector<int> drain(OutputChannel& ch) {
  std::vector<int> tokens;
  while (true) {
    auto out = ch.pop(std::chrono::seconds(60));
    if (!out) {
      ADD_FAILURE() << "no output within 60 s";
      return tokens;
    }
    tokens.insert(tokens.end(), out->new_tokens.begin(), out->new_tokens.end());
    if (out->finish != FinishReason::None) return tokens;
  }
}

TEST(TpEngine, GreedyOutputsEqualOneDevice) {
  for (const std::string combo : {"moe", "e2b_like"}) {
    auto tp = std::make_shared<TensorParallelModel>(ModelSpec{golden_dir(combo), LoadFormat::Auto}, "cpu", 2);
    TensorParallelModel one(ModelSpec{golden_dir(combo), LoadFormat::Auto}, "cpu", 1);
    for (bool overlap : {true, false}) {
      SCOPED_TRACE(combo + (overlap ? ", overlapped" : ", not overlapped"));
      EngineOptions o;
      o.max_num_seqs = 4;
      o.max_num_batched_tokens = 16;  // prompts arrive in chunks, decodes batch with them
      o.max_model_len = 128;
      o.page_size = 4;
      o.kv_cache_memory_bytes = 4 << 20;
      o.disable_overlap_schedule = !overlap;
      Engine engine(std::shared_ptr<Gemma4Model>(tp, &tp->model(0)), o);
      engine.start();
      std::vector<std::vector<int>> prompts;
      std::vector<std::shared_ptr<OutputChannel>> chans;
      for (int i = 0; i < 3; ++i) {
        std::vector<int> p;
        for (int t = 0; t < 10 + 7 * i; ++t) p.push_back(3 + (t * 37 + i * 101) % 500);
        prompts.push_back(p);
        GenerationRequest r;
        r.id = "r" + std::to_string(i);
        r.prompt = p;
        r.sampling.temperature = 0;  // greedy
        r.sampling.max_tokens = 12;
        r.sampling.ignore_eos = true;
        r.output = std::make_shared<OutputChannel>();
        chans.push_back(r.output);
        ASSERT_TRUE(engine.submit(r).ok);
      }
      SequenceRunOptions opt;
      for (int i = 0; i < 3; ++i)
        EXPECT_EQ(drain(*chans[size_t(i)]), greedy_continuation(one.model(0), prompts[size_t(i)], 12, opt)) << i;
      const EngineStats stats = engine.stats();
      if (overlap) EXPECT_GT(stats.overlapped_steps, 0u) << "decode steps should be launched ahead";
      else EXPECT_EQ(stats.overlapped_steps, 0u);
      engine.stop();
    }
  }
}

}  // namespace
}  // namespace gs
