#include "api/replica_router.h"

#include <algorithm>

#include "core/error.h"

namespace gs::api {

namespace {
constexpr int kMaxPrefixPages = 64;        // prefixes up to 64 pages decide; longer ones are rare and costly
constexpr size_t kMaxRecords = size_t(1) << 20;  // the record is forgotten past this many prefixes
uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  h ^= h >> 31;
  h *= 0xbf58476d1ce4e5b9ull;
  return h ^ (h >> 29);
}
}  // namespace

ReplicaRouter::ReplicaRouter(std::vector<Engine*> replicas, int page_size, int slack)
    : replicas_(std::move(replicas)), page_size_(page_size), slack_(slack) {
  GS_CHECK(!replicas_.empty(), "replica router: no replicas");
  GS_CHECK(page_size_ > 0 && slack_ >= 0, "replica router: page size {} and slack {}", page_size_, slack_);
  outstanding_.resize(replicas_.size());
}

std::vector<uint64_t> ReplicaRouter::prefix_hashes(const std::vector<int>& prompt) const {
  std::vector<uint64_t> out;
  uint64_t h = 0x6a09e667f3bcc909ull;
  const size_t pages = std::min<size_t>(prompt.size() / size_t(page_size_), kMaxPrefixPages);
  for (size_t p = 0; p < pages; ++p) {
    for (size_t i = p * size_t(page_size_); i < (p + 1) * size_t(page_size_); ++i) h = mix(h, uint64_t(uint32_t(prompt[i])));
    out.push_back(h);
  }
  return out;
}

std::vector<int> ReplicaRouter::loads_locked() const {
  std::vector<int> l;
  for (auto& chans : outstanding_) {
    chans.erase(std::remove_if(chans.begin(), chans.end(), [](const auto& c) { return c->finished(); }), chans.end());
    l.push_back(int(chans.size()));
  }
  return l;
}

int ReplicaRouter::choose_locked(const std::vector<uint64_t>& hashes, const std::vector<int>& loads,
                                 bool advance) const {
  const int n = int(replicas_.size());
  const int least = *std::min_element(loads.begin(), loads.end());
  for (auto it = hashes.rbegin(); it != hashes.rend(); ++it) {
    auto f = owner_.find(*it);
    if (f != owner_.end() && f->second < n) {
      if (loads[size_t(f->second)] <= least + slack_) return f->second;
      break;  // the longest known prefix sits on a busy replica: balance instead
    }
  }
  // Least loaded, ties taken in turn so that an idle server spreads new conversations.
  for (int k = 0; k < n; ++k) {
    const int r = int((next_ + unsigned(k)) % unsigned(n));
    if (loads[size_t(r)] == least) {
      if (advance) next_ = unsigned(r) + 1;
      return r;
    }
  }
  return 0;
}

int ReplicaRouter::choose(const std::vector<int>& prompt) const {
  const std::vector<uint64_t> hashes = prefix_hashes(prompt);
  std::lock_guard<std::mutex> lock(mu_);
  return choose_locked(hashes, loads_locked(), false);
}

Engine::SubmitResult ReplicaRouter::submit(GenerationRequest req) {
  const std::vector<uint64_t> hashes = prefix_hashes(req.prompt);
  int r = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    r = choose_locked(hashes, loads_locked(), true);
    if (owner_.size() + hashes.size() > kMaxRecords) owner_.clear();
    for (uint64_t h : hashes) owner_[h] = r;
    outstanding_[size_t(r)].push_back(req.output);
  }
  return replicas_[size_t(r)]->submit(std::move(req));
}

void ReplicaRouter::abort(const std::string& request_id) {
  // Ids are unique across the server; the replicas that do not hold it ignore the call.
  for (Engine* e : replicas_) e->abort(request_id);
}

EngineStats ReplicaRouter::stats() const {
  std::vector<EngineStats> parts;
  for (Engine* e : replicas_) parts.push_back(e->stats());
  return sum_stats(parts);
}

RequestLimits ReplicaRouter::limits() const { return replicas_[0]->request_limits(); }

EngineStats sum_stats(const std::vector<EngineStats>& parts) {
  EngineStats s;
  if (parts.empty()) return s;
  s.page_size = parts[0].page_size;
  for (const EngineStats& p : parts) {
    s.running += p.running;
    s.waiting += p.waiting;
    for (int g = 0; g < kNumKvGroups; ++g) {
      s.pages_used[g] += p.pages_used[g];
      s.pages_cached[g] += p.pages_cached[g];
      s.pages_total[g] += p.pages_total[g];
      s.pages_peak[g] += p.pages_peak[g];
    }
    s.prefix_queries += p.prefix_queries;
    s.prefix_hits += p.prefix_hits;
    s.prompt_tokens += p.prompt_tokens;
    s.generation_tokens += p.generation_tokens;
    s.preemptions += p.preemptions;
    s.steps += p.steps;
    for (int k = 0; k < 2; ++k) {
      s.steps_of_kind[k] += p.steps_of_kind[k];
      s.step_seconds[k] += p.step_seconds[k];
    }
    s.overlapped_steps += p.overlapped_steps;
    s.discarded_tokens += p.discarded_tokens;
    s.spec_drafts += p.spec_drafts;
    s.spec_draft_tokens += p.spec_draft_tokens;
    s.spec_accepted_tokens += p.spec_accepted_tokens;
    if (s.spec_accepted_per_position.size() < p.spec_accepted_per_position.size())
      s.spec_accepted_per_position.resize(p.spec_accepted_per_position.size(), 0);
    for (size_t i = 0; i < p.spec_accepted_per_position.size(); ++i)
      s.spec_accepted_per_position[i] += p.spec_accepted_per_position[i];
  }
  return s;
}

}  // namespace gs::api
