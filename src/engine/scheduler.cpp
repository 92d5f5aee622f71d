#include "engine/scheduler.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace gs {

Scheduler::Scheduler(KvManager& kv, SchedulerConfig cfg) : kv_(kv), cfg_(cfg) {
  GS_CHECK(cfg_.max_num_seqs > 0, "scheduler: max_num_seqs must be positive, got {}", cfg_.max_num_seqs);
  GS_CHECK(cfg_.max_num_batched_tokens >= cfg_.max_num_seqs,
           "scheduler: max_num_batched_tokens ({}) must be at least max_num_seqs ({}) so every running request "
           "can decode in one step",
           cfg_.max_num_batched_tokens, cfg_.max_num_seqs);
  GS_CHECK(cfg_.max_logit_rows > cfg_.max_num_seqs, "scheduler: max_logit_rows ({}) must exceed max_num_seqs ({})",
           cfg_.max_logit_rows, cfg_.max_num_seqs);
}

void Scheduler::add(std::unique_ptr<Sequence> seq) {
  GS_CHECK(!seq->tokens.empty(), "scheduler: sequence '{}' has no tokens", seq->req.id);
  auto [it, inserted] = seqs_.emplace(seq->req.id, nullptr);
  GS_CHECK(inserted, "scheduler: duplicate request id '{}'", seq->req.id);
  seq->state = Sequence::State::Waiting;
  waiting_.push_back(seq.get());
  it->second = std::move(seq);
}

Sequence* Scheduler::find(const std::string& id) const {
  auto it = seqs_.find(id);
  return it == seqs_.end() ? nullptr : it->second.get();
}

std::unique_ptr<Sequence> Scheduler::remove(Sequence* s) {
  auto it = seqs_.find(s->req.id);
  GS_CHECK(it != seqs_.end() && it->second.get() == s, "scheduler: removing unknown sequence '{}'", s->req.id);
  kv_.free(s->pages);
  if (s->state == Sequence::State::Running)
    running_.erase(std::find(running_.begin(), running_.end(), s));
  else
    waiting_.erase(std::find(waiting_.begin(), waiting_.end(), s));
  s->state = Sequence::State::Finished;
  std::unique_ptr<Sequence> out = std::move(it->second);
  seqs_.erase(it);
  return out;
}

int Scheduler::prompt_logprob_rows(const Sequence& s, int start, int end) const {
  if (!s.req.sampling.prompt_logprobs) return 0;
  // Row at position p predicts token p+1; only rows whose next token is a prompt token count.
  return std::max(0, std::min(end, s.prompt_len - 1) - start);
}

int Scheduler::choose_chunk(const Sequence& s, int budget, int logit_budget) const {
  int start = s.num_computed;
  int remaining = s.remaining();
  int n = std::min(remaining, budget);
  if (s.req.sampling.prompt_logprobs && prompt_logprob_rows(s, start, start + n) > 0)
    n = std::min(n, logit_budget - 1);  // keep one row for the sample the chunk may end with
  else if (n == remaining && logit_budget < 1)
    n = remaining - 1;
  if (n <= 0) return 0;
  // Never end a chunk inside an image: move the cut back to the start of the image's block.
  int end = start + n;
  int b = s.mm_block(end);
  if (end < int(s.tokens.size()) && b >= 0 && s.mm_block(end - 1) == b) {
    while (end > start && s.mm_block(end - 1) == b) --end;
    n = end - start;
  }
  return n;
}

void Scheduler::preempt(Sequence* s, StepPlan& plan) {
  kv_.free(s->pages);
  s->drafts.clear();
  s->num_computed = 0;
  s->state = Sequence::State::Waiting;
  s->num_preemptions++;
  running_.erase(std::find(running_.begin(), running_.end(), s));
  waiting_.push_front(s);
  plan.preempted.push_back(s);
  counters_.preemptions++;
}

bool Scheduler::allocate_or_preempt(Sequence* s, int start, int end, StepPlan& plan) {
  while (!kv_.allocate(s->pages, start, end)) {
    Sequence* victim = nullptr;
    for (auto it = running_.rbegin(); it != running_.rend(); ++it)
      if (*it != s && !(*it)->in_plan) {
        victim = *it;
        break;
      }
    // Preempting a newer sequence keeps the oldest ones moving; only the newest preempts itself.
    if (!victim || std::find(running_.begin(), running_.end(), victim) < std::find(running_.begin(), running_.end(), s))
      victim = s;
    preempt(victim, plan);
    if (victim == s) return false;
  }
  return true;
}

void Scheduler::add_chunk(Sequence* s, int q_len, StepPlan& plan, int& budget, int& logit_budget, int num_drafts) {
  if (num_drafts > 0) {
    s->tokens.insert(s->tokens.end(), s->drafts.begin(), s->drafts.begin() + num_drafts);
    s->drafts_in_tokens = num_drafts;
    q_len += num_drafts;
  }
  s->drafts.clear();  // verified now, or stale once the chunk changes what the sequence knows
  SequenceStep st;
  st.tokens = &s->tokens;
  st.start = s->num_computed;
  st.q_len = q_len;
  for (int g = 0; g < kNumKvGroups; ++g)
    st.page_table[g] = s->pages.table[g].empty() ? nullptr : &s->pages.table[g];
  st.mm_block = s->req.mm_block.empty() ? nullptr : &s->req.mm_block;
  st.images = s->req.images.empty() ? nullptr : &s->req.images;
  st.sample = st.end() == int(s->tokens.size());  // it reaches the last known token
  st.num_drafts = num_drafts;
  st.prompt_logprob_rows = prompt_logprob_rows(*s, st.start, st.end());
  const int rows = st.prompt_logprob_rows + st.sampled_rows();
  plan.seqs.push_back(s);
  plan.steps.push_back(st);
  plan.num_tokens += q_len;
  plan.num_logit_rows += rows;
  budget -= q_len;
  logit_budget -= rows;
  s->in_plan = true;
}

StepPlan Scheduler::schedule() {
  StepPlan plan;
  int budget = cfg_.max_num_batched_tokens;
  int logit_budget = cfg_.max_logit_rows;
  for (Sequence* s : running_) s->in_plan = false;

  // 1 and 2: running sequences, decodes before prefill chunks.
  for (bool decodes : {true, false}) {
    std::vector<Sequence*> snapshot = running_;
    for (Sequence* s : snapshot) {
      if (s->state != Sequence::State::Running || s->in_plan) continue;  // preempted meanwhile
      if ((s->remaining() == 1) != decodes) continue;
      if (budget <= 0) break;
      int n = choose_chunk(*s, budget, logit_budget);
      if (n == 0) continue;
      // A decode with drafts verifies as many of them as the step's budgets leave room for.
      const int k = decodes ? std::max(0, std::min({int(s->drafts.size()), budget - n, logit_budget - 1})) : 0;
      if (!allocate_or_preempt(s, s->num_computed, s->num_computed + n + k, plan)) continue;
      add_chunk(s, n, plan, budget, logit_budget, k);
    }
  }

  // 3: admission, FCFS. A step that had to preempt has no pages to spare for newcomers.
  int reserve[kNumKvGroups];
  for (int g = 0; g < kNumKvGroups; ++g)
    reserve[g] = int(std::floor(cfg_.watermark * kv_.pool(KvGroup(g)).num_pages()));
  while (plan.preempted.empty() && !waiting_.empty() && int(running_.size()) < cfg_.max_num_seqs && budget > 0) {
    Sequence* s = waiting_.front();
    int cached = 0;
    if (!s->req.sampling.prompt_logprobs)
      cached = kv_.apply_prefix_hit(s->pages, s->tokens.data(), int(s->tokens.size()));
    s->num_computed = cached;
    int n = choose_chunk(*s, budget, logit_budget);
    // The watermark keeps room for running requests' decodes; with none running it only blocks.
    const int none[kNumKvGroups] = {0, 0};
    const int* keep = running_.empty() ? none : reserve;
    if (n == 0 || !kv_.can_allocate(s->pages, s->num_computed, s->num_computed + n, keep)) {
      kv_.free(s->pages);  // give the hit back; the lookup is redone next step
      s->num_computed = 0;
      break;
    }
    bool ok = kv_.allocate(s->pages, s->num_computed, s->num_computed + n);
    GS_CHECK(ok, "scheduler: allocation failed after can_allocate for '{}'", s->req.id);
    if (kv_.prefix_caching() && s->pages.cacheable && !s->req.sampling.prompt_logprobs) {
      counters_.prefix_queries += s->tokens.size();
      counters_.prefix_hits += cached;
    }
    if (!s->admitted_once) s->cached_prompt_tokens = std::min(cached, s->prompt_len);
    s->admitted_once = true;
    waiting_.pop_front();
    s->state = Sequence::State::Running;
    running_.push_back(s);
    add_chunk(s, n, plan, budget, logit_budget);
  }
  return plan;
}

void Scheduler::commit(const StepPlan& plan) {
  for (size_t i = 0; i < plan.size(); ++i) {
    Sequence* s = plan.seqs[i];
    const SequenceStep& st = plan.steps[i];
    if (s->state == Sequence::State::Finished) continue;  // aborted while its step ran
    GS_CHECK(s->num_computed == st.start, "scheduler: '{}' moved from {} to {} during its step", s->req.id, st.start,
             s->num_computed);
    s->num_computed += st.q_len - st.num_drafts;  // drafts count once accepted (accept())
    kv_.index_computed_pages(s->pages, s->tokens.data(), s->num_computed);
    kv_.release_out_of_window(s->pages, s->num_computed);
  }
}

void Scheduler::accept(Sequence* s, int accepted) {
  if (s->state == Sequence::State::Finished || accepted <= 0) return;
  GS_CHECK(s->num_computed + accepted <= int(s->tokens.size()), "scheduler: '{}' accepts {} drafts past its {} tokens",
           s->req.id, accepted, s->tokens.size());
  s->num_computed += accepted;
  kv_.index_computed_pages(s->pages, s->tokens.data(), s->num_computed);
  kv_.release_out_of_window(s->pages, s->num_computed);
}

void Scheduler::check_pages(const StepPlan* plan) const {
  std::vector<const SeqPages*> tables;
  std::vector<std::string> names;
  for (const auto& [id, s] : seqs_) {
    tables.push_back(&s->pages);
    names.push_back("'" + id + "'");
  }
  kv_.check_ownership(tables, names);
  kv_.check_invariants();
  if (!plan) return;
  int P = kv_.page_size();
  for (size_t k = 0; k < plan->size(); ++k) {
    const Sequence& s = *plan->seqs[k];
    const SequenceStep& c = plan->steps[k];
    for (int g = 0; g < kNumKvGroups; ++g) {
      if (!kv_.has_group(KvGroup(g))) continue;
      const auto& t = s.pages.table[g];
      int first = kv_.first_live_page(KvGroup(g), c.start);
      int last = (c.end() + P - 1) / P;
      for (int i = first; i < last; ++i)
        GS_CHECK(i < int(t.size()) && t[i] >= 0,
                 "page check: '{}' runs positions [{}, {}) but its {} page table has no page for logical page {} "
                 "(table size {})",
                 s.req.id, c.start, c.end(), g == int(KvGroup::Full) ? "full" : "sliding", i, t.size());
    }
  }
}

}  // namespace gs
