// The speculative engine tests' shared parts: target + assistant pairs of fixtures/draft_golden on
// a backend, a workload of greedy requests, running it through an Engine, and drafts from a script
// (the reference run's own continuation with some drafts made wrong). Used by the cpu tests
// (speculative_engine_test.cpp) and the cuda ones (tests/engine_cuda).
#pragma once
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>

#include "checkpoint/checkpoint.h"
#include "engine/draft_proposer.h"
#include "engine/engine.h"
#include "engine_results.h"
#include "kernels/cpu/cpu_backend.h"
#include "model/weight_loader.h"

namespace gs {

struct Pair {
  std::unique_ptr<Backend> backend;
  std::shared_ptr<Gemma4Model> target;
  std::shared_ptr<Gemma4Drafter> drafter;
};

// A target alone (no drafter) from a checkpoint directory, on `backend`.
inline Pair load_target(const std::string& dir, std::unique_ptr<Backend> backend) {
  Pair p;
  p.backend = std::move(backend);
  auto tck = Checkpoint::open(dir);
  ModelConfig tcfg = ModelConfig::from_json(tck->config_json());
  p.target = std::make_shared<Gemma4Model>(tcfg, load_weights(*tck, tcfg, *p.backend), *p.backend);
  return p;
}

// A pair of fixtures/draft_golden on `backend` (the cpu backend, one thread, when none is given).
inline Pair load_pair(const std::string& name, DraftConvention convention = DraftConvention::Transformers,
                      std::unique_ptr<Backend> backend = nullptr) {
  const std::string dir = std::string(GS_SOURCE_DIR) + "/fixtures/draft_golden/" + name;
  Pair p = load_target(dir + "/target", backend ? std::move(backend) : make_cpu_backend(1));
  const ModelConfig& tcfg = p.target->config();
  auto ack = Checkpoint::open(dir + "/assistant");
  ModelConfig acfg = ModelConfig::from_json(ack->config_json());
  ModelWeights aw = load_weights(*ack, acfg, *p.backend);
  acfg.bind_assistant_to(tcfg);
  p.drafter = std::make_shared<Gemma4Drafter>(acfg, std::move(aw), *p.target, *p.backend, convention);
  return p;
}

struct Workload {
  std::vector<GenerationRequest> requests;
};

// Prompts of 2..60 tokens (past the sliding windows), some sharing a prefix, some ending on EOS
// when it is drawn, lengths from 1 to 24 new tokens.
inline Workload make_workload(int n, uint32_t seed) {
  std::mt19937 rng(seed);
  Workload w;
  std::vector<int> shared(20);
  for (int& t : shared) t = 3 + int(rng() % 500);
  for (int i = 0; i < n; ++i) {
    GenerationRequest r;
    r.id = "r" + std::to_string(i);
    const int len = 2 + int(rng() % 59);
    if (i % 3 == 0) r.prompt.assign(shared.begin(), shared.end());
    while (int(r.prompt.size()) < len) r.prompt.push_back(3 + int(rng() % 500));
    r.sampling.temperature = 0;
    r.sampling.max_tokens = 1 + int(rng() % 24);
    r.sampling.ignore_eos = i % 2 == 0;
    r.sampling.logprobs = 2;  // tie_divergence() reads the top 2
    w.requests.push_back(r);
  }
  return w;
}

inline std::map<std::string, Result> run(Pair& p, const Workload& w, EngineOptions o, EngineStats* stats = nullptr) {
  Engine engine(p.target, o);
  engine.start();
  std::map<std::string, std::shared_ptr<OutputChannel>> channels;
  for (GenerationRequest r : w.requests) {
    r.output = std::make_shared<OutputChannel>();
    channels[r.id] = r.output;
    const auto res = engine.submit(r);
    EXPECT_TRUE(res.ok) << res.error;
  }
  std::map<std::string, Result> out;
  for (auto& [id, ch] : channels) out[id] = drain(*ch);
  // The last output is pushed after the pages are freed (engine.h): nothing may be held now.
  const EngineStats s = engine.stats();
  EXPECT_EQ(s.pages_used[0] + s.pages_used[1], 0);
  if (stats) *stats = s;
  engine.stop();
  return out;
}

inline EngineOptions options(int max_num_seqs, int batched_tokens, size_t kv_bytes) {
  EngineOptions o;
  o.max_num_seqs = max_num_seqs;
  o.max_num_batched_tokens = batched_tokens;
  o.max_model_len = 128;
  o.page_size = 4;
  o.kv_cache_memory_bytes = kv_bytes;
  o.seed = 1;
  return o;
}

// The workload without drafts and with p's drafter (k tokens a round), both from `plain`.
struct DraftedRuns {
  std::map<std::string, Result> plain, drafted;
  EngineStats stats;  // of the drafted run
};
inline DraftedRuns run_with_and_without_drafter(Pair& p, const Workload& w, const EngineOptions& plain, int k) {
  EngineOptions spec = plain;
  spec.speculative.drafter = p.drafter;
  spec.speculative.num_speculative_tokens = k;
  DraftedRuns r;
  r.plain = run(p, w, plain);
  r.drafted = run(p, w, spec, &r.stats);
  return r;
}

// Drafts from a script: the reference run's own greedy continuation, with every draft at a
// position where hash(id, position) % wrong_every == 0 made wrong. Acceptance is then high and
// known, so verification's accept paths run: several tokens per step, the bonus token, a stop token
// or the length limit inside an accepted run, drafts cut by the step's budgets.
class ScriptedDrafts : public DraftSource {
 public:
  ScriptedDrafts(std::map<std::string, std::vector<int>> continuations, int k, int wrong_every, int vocab)
      : cont_(std::move(continuations)), k_(k), wrong_every_(wrong_every), vocab_(vocab) {}
  int num_speculative_tokens() const override { return k_; }
  void propose(const std::vector<DraftRequest>& reqs, const Tensor&, KvCache&) override {
    for (const DraftRequest& r : reqs) {
      const std::vector<int>& want = cont_.at(r.seq->req.id);
      for (int j = 0; j < r.num_tokens; ++j) {
        const size_t pos = size_t(r.seq->num_generated() + j);  // index of the drafted output token
        int t = pos < want.size() ? want[pos] : 3;
        if ((std::hash<std::string>{}(r.seq->req.id) + pos * 2654435761u) % size_t(wrong_every_) == 0)
          t = (t + 1) % vocab_;
        r.seq->drafts.push_back(t);
      }
    }
    ++calls;
  }
  int calls = 0;

 private:
  std::map<std::string, std::vector<int>> cont_;
  int k_, wrong_every_, vocab_;
};

// Runs w with `o` plus drafts scripted from `want` (k a round, one in wrong_every wrong) and
// expects every output to equal `want`'s; returns the source (its call count).
// `expect` compares each output with want's (tie-aware by default; the cuda batch-invariant test
// asks for equal tokens).
using ExpectSame = void (*)(const Result& got, const Result& want, const std::string& id);
inline std::shared_ptr<ScriptedDrafts> run_scripted_exact(Pair& p, const Workload& w, EngineOptions o,
                                                          const std::map<std::string, Result>& want, int k,
                                                          int wrong_every, EngineStats* stats,
                                                          ExpectSame expect = expect_same_greedy) {
  std::map<std::string, std::vector<int>> cont;
  for (const auto& [id, r] : want) cont[id] = r.tokens;
  auto source = std::make_shared<ScriptedDrafts>(cont, k, wrong_every, p.target->config().vocab_size);
  o.speculative.source = source;
  const auto got = run(p, w, o, stats);
  for (const auto& [id, ref] : want) expect(got.at(id), ref, id);
  return source;
}

}  // namespace gs
