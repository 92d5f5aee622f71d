// Runs one engine step on the model: the scheduled chunks become SeqSteps and one AttentionBatch,
// Gemma4Model::forward computes the logits of the rows that need them, and sampling, penalties and
// log-probabilities run on the backend. The runner knows nothing about requests or scheduling: the
// engine hands it a RunnerSeq per scheduled chunk.
//
// launch() enqueues the whole step (on the cuda backend every op is asynchronous, so it returns
// while the device works); collect() waits for it and copies back only the sampled ids and the
// log-probabilities that were asked for. Between the two the engine thread is free for host work.
//
// Logit rows: the sampled rows come first (the last row of each chunk that reaches the end of its
// known tokens), then the prompt-logprob rows; both slices are contiguous in the logits tensor.
#pragma once
#include <utility>
#include <vector>

#include "model/gemma4_model.h"
#include "ops/backend.h"
#include "ops/kv_cache.h"

namespace gs {

struct RunnerSeq {
  const std::vector<int>* tokens = nullptr;  // all known tokens; the chunk is [start, start + q_len)
  int start = 0;
  int q_len = 0;
  const std::vector<int>* page_table[kNumKvGroups] = {nullptr, nullptr};  // null: no such cache layers
  const std::vector<int>* mm_block = nullptr;  // vision block ids by position (prompt only), or null
  bool sample = false;
  SamplingRow sampling;                        // seed and step already set
  float presence_penalty = 0.f, frequency_penalty = 0.f;
  const std::vector<std::pair<int, int>>* token_counts = nullptr;  // generated token -> count
  int logprobs = -1;                           // -1: none; 0: the chosen token's; n: plus the top n
  int prompt_logprob_rows = 0;                 // rows [start, start + n): logprob of the token after each
};

struct RunnerOutput {
  int token = -1;                              // when sampled
  float logprob = 0.f;
  std::vector<std::pair<int, float>> top;      // top-n alternatives when asked
  // One per prompt-logprob row: logprob of tokens[p + 1] and the top-n of that row.
  std::vector<float> prompt_logprobs;
  std::vector<std::vector<std::pair<int, float>>> prompt_top;
};

class ModelRunner {
 public:
  static constexpr int kMaxTopLogprobs = 20;  // OpenAI's limit

  // max_tokens / max_logit_rows: the step limits the model was reserved for.
  ModelRunner(Gemma4Model& model, KvCache& cache, int page_size, int max_tokens, int max_logit_rows);

  void launch(const std::vector<RunnerSeq>& seqs);
  std::vector<RunnerOutput> collect();
  // After a failed step: waits for whatever was enqueued and forgets the step.
  void reset();

 private:
  Gemma4Model& model_;
  Backend& be_;
  KvCache& cache_;
  int page_size_, max_tokens_, max_logit_rows_;
  Tensor ids_, logit_rows_, out_ids_, out_logprobs_, top_ids_, top_logprobs_;

  // State of the launched step.
  std::vector<RunnerSeq> seqs_;
  ForwardOutput fwd_;
  AttentionBatch batch_;
  int num_sampled_ = 0, num_prompt_rows_ = 0, top_n_ = 0;
  bool launched_ = false;
};

}  // namespace gs
