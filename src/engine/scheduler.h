// Continuous batching. Every step gets a token budget (max_num_batched_tokens) and is built in
// this order:
//   1. running sequences that decode (one token each), oldest first;
//   2. running sequences still in prefill (a prompt, or a recompute after preemption), chunked to
//      what is left of the budget;
//   3. waiting sequences, first come first served, while fewer than max_num_seqs run and both
//      pools can hold the next chunk plus a small watermark (skipped in a step that preempted).
// When a running sequence cannot get pages, the newest running sequence not yet in the step is
// preempted by recompute: its pages are freed and it goes back to the front of the queue keeping
// its generated tokens; if it is itself the newest, it preempts itself. Chunks never split one
// image's soft tokens (Sequence::mm_block), which attend to each other bidirectionally.
#pragma once
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/kv_manager.h"
#include "engine/sequence.h"
#include "runner/sequence_step.h"

namespace gs {

struct SchedulerConfig {
  int max_num_seqs = 64;
  int max_num_batched_tokens = 2048;
  int max_logit_rows = 128;  // logits rows of one step (sampled rows + prompt-logprob rows)
  double watermark = 0.01;   // fraction of each pool that admission leaves free for decodes
};

// One step: the sequences that run and, beside each, its share of the step in the shape the runner
// takes (SequenceStep: tokens, range, page tables, prompt-logprob rows, whether it samples). The
// engine adds the sampling fields before launching it.
struct StepPlan {
  std::vector<Sequence*> seqs;
  std::vector<SequenceStep> steps;   // steps[i] is seqs[i]'s
  int num_tokens = 0;
  int num_logit_rows = 0;
  std::vector<Sequence*> preempted;  // sequences preempted while building this step
  bool empty() const { return steps.empty(); }
  size_t size() const { return steps.size(); }
};

struct SchedulerCounters {
  uint64_t prefix_queries = 0;  // prompt tokens looked up at admission
  uint64_t prefix_hits = 0;     // tokens served from the prefix cache
  uint64_t preemptions = 0;
};

class Scheduler {
 public:
  Scheduler(KvManager& kv, SchedulerConfig cfg);

  const SchedulerConfig& config() const { return cfg_; }
  // Queues a new sequence at the back of the waiting queue. Its id must be unique.
  void add(std::unique_ptr<Sequence> seq);
  Sequence* find(const std::string& id) const;
  // Frees the sequence's pages and hands it back (finished or aborted) in State::Finished. A step
  // already launched may still write the freed pages: that is safe because every later step that
  // reuses them runs after it on the device.
  std::unique_ptr<Sequence> remove(Sequence* seq);

  StepPlan schedule();
  // Once the step is launched (it need not have run: the next step is ordered after it on the
  // device): advances num_computed of every chunk, indexes completed pages in the prefix cache,
  // releases sliding pages that fell out of the window. Chunks of finished sequences are skipped.
  void commit(const StepPlan& plan);
  // After a verify step's results: the sequence's `accepted` drafts join its computed tokens
  // (commit() counted only the token before them).
  void accept(Sequence* s, int accepted);

  const std::vector<Sequence*>& running() const { return running_; }
  const std::deque<Sequence*>& waiting() const { return waiting_; }
  bool idle() const { return running_.empty() && waiting_.empty(); }
  const SchedulerCounters& counters() const { return counters_; }
  KvManager& kv() { return kv_; }

  // --debug-page-checks: every page table of every sequence against pool bounds and reference
  // counts, and the chunks' needed pages present. Throws gs::Error with a dump.
  void check_pages(const StepPlan* plan) const;

 private:
  int choose_chunk(const Sequence& s, int budget, int logit_budget) const;
  int prompt_logprob_rows(const Sequence& s, int start, int end) const;
  bool allocate_or_preempt(Sequence* s, int start, int end, StepPlan& plan);
  void preempt(Sequence* s, StepPlan& plan);
  void add_chunk(Sequence* s, int q_len, StepPlan& plan, int& budget, int& logit_budget, int num_drafts = 0);

  KvManager& kv_;
  SchedulerConfig cfg_;
  std::unordered_map<std::string, std::unique_ptr<Sequence>> seqs_;
  std::vector<Sequence*> running_;  // admission order
  std::deque<Sequence*> waiting_;
  SchedulerCounters counters_;
};

}  // namespace gs
