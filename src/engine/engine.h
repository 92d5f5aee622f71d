// The serving engine: owns the model's KV cache, the scheduler and the runner, and runs one
// background thread that turns submitted GenerationRequests into RequestOutputs on each request's
// OutputChannel. The HTTP server (and `gemmaserve run`) talk to the engine only through this class.
//
// Threading: submit/abort/stats may be called from any thread. Everything else (pages, scheduling,
// the model) belongs to the engine thread.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/request.h"
#include "engine/request_validation.h"
#include "model/gemma4_drafter.h"
#include "model/gemma4_model.h"
#include "model/model_config.h"

namespace gs {

class DraftSource;

// Speculative decoding (vLLM's speculative_config): off unless a drafter (or a source) is given.
struct SpeculativeOptions {
  std::shared_ptr<Gemma4Drafter> drafter;  // the MTP assistant, bound to the engine's model, on its backend
  int num_speculative_tokens = 3;          // K, drafts per round
  std::shared_ptr<DraftSource> source;     // instead of the drafter: drafts from elsewhere (tests)
  // Benchmarks only (--speculative-accept-rate): each draft also passes with this probability, so
  // random weights can be timed at a chosen acceptance length; outputs are meaningless.
  double forced_accept_rate = 0;
  // > 0: no drafting while more sequences than this are running (vLLM's
  // speculative_disable_by_batch_size); they decode one token a step until the batch shrinks.
  int disable_by_batch_size = 0;
  bool enabled() const { return drafter || source; }
};

// Field names follow vLLM / SGLang so the command-line flags read the same.
struct EngineOptions {
  int max_num_seqs = 64;              // cap on requests running at once
  int max_num_batched_tokens = 2048;  // token budget of one step (decodes + prefill chunks)
  int max_model_len = 0;              // prompt + output cap; 0: the model's max_position_embeddings
  int page_size = 16;                 // tokens per KV page (both pools)
  double gpu_memory_utilization = 0.90;  // cuda: fraction of total device memory the engine may use
  size_t kv_cache_memory_bytes = 0;   // explicit KV budget (both pools); 0: cuda derives it from
                                      // gpu_memory_utilization, cpu uses 1 GiB
  double swa_full_tokens_ratio = 0;   // sliding-pool tokens per full-pool token; 0: derived (memory_plan.h)
  bool enable_prefix_caching = true;
  bool enable_multimodal = false;
  int max_queue = 1024;               // waiting requests beyond this are rejected with 429
  bool debug_page_checks = false;     // validate every page-table entry before each step
  bool enforce_eager = false;         // never replay decode steps from CUDA graphs
  bool disable_overlap_schedule = false;  // schedule step N+1 only after step N's tokens are back
  int cuda_graph_max_bs = 0;          // largest decode batch run from a graph; 0: max_num_seqs
  uint64_t seed = 0;                  // base of the per-request seeds of unseeded requests; 0: random
  std::vector<int> eos_token_ids;     // stop ids (generation_config.json); empty: the model config's
  SpeculativeOptions speculative;
};

struct EngineStats {
  int running = 0, waiting = 0;
  int pages_used[kNumKvGroups] = {0, 0};   // held by requests (0 once every request is done)
  int pages_cached[kNumKvGroups] = {0, 0}; // held by no request, kept readable by the prefix cache
  int pages_total[kNumKvGroups] = {0, 0};
  int pages_peak[kNumKvGroups] = {0, 0};   // the most pages_used seen after any step (pool sizing)
  int page_size = 0;
  uint64_t prefix_queries = 0;   // prompt tokens looked up in the prefix cache
  uint64_t prefix_hits = 0;      // of those, tokens served from it
  uint64_t prompt_tokens = 0;
  uint64_t generation_tokens = 0;
  uint64_t preemptions = 0;
  uint64_t steps = 0;
  // Steps by kind and their time (launch or the previous step's results, whichever is later, to
  // the step's results): the served decode step against bench-decode's, what prefill costs.
  static constexpr int kDecodeStep = 0, kPrefillStep = 1;  // prefill: a chunk of more than one token
  uint64_t steps_of_kind[2] = {0, 0};
  double step_seconds[2] = {0, 0};
  uint64_t overlapped_steps = 0;  // steps launched while the step before them still ran
  uint64_t discarded_tokens = 0;  // tokens computed ahead for requests that had just finished
  // Speculative decoding (vLLM's vllm:spec_decode_* counters): verify rounds, drafts verified,
  // drafts accepted, and per draft position the rounds that accepted it.
  uint64_t spec_drafts = 0, spec_draft_tokens = 0, spec_accepted_tokens = 0;
  std::vector<uint64_t> spec_accepted_per_position;
};

class Engine {
 public:
  Engine(std::shared_ptr<Gemma4Model> model, EngineOptions opts);
  ~Engine();  // stop()s
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  void start();
  // Aborts every running and waiting request (each gets a final FinishReason::Abort output) and
  // returns after the engine thread has joined. Idempotent.
  void stop();

  struct SubmitResult {
    bool ok = false;
    int http_status = 200;   // 400 for bad requests, 429 when the queue is full, 503 when stopped
    std::string error;
    std::string param;       // with a 400 from validate_request: the field (RequestProblem::param)
  };
  // Rejects (without touching the output channel): whatever validate_request finds against
  // request_limits() (400), a duplicate id (400), a full queue (429), a stopped engine (503).
  SubmitResult submit(GenerationRequest req);
  // Unknown or finished ids are ignored. The request's pages are freed at the next engine step and
  // its channel receives a final FinishReason::Abort output.
  void abort(const std::string& request_id);

  EngineStats stats() const;
  const ModelConfig& model_config() const;
  int max_model_len() const;
  // What submit() checks requests against (request_validation.h).
  RequestLimits request_limits() const;
  const EngineOptions& options() const;
  std::string memory_plan() const;  // the multi-line plan printed at start-up

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gs
