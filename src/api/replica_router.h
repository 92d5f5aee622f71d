// Data parallelism behind one endpoint (--data-parallel-size N): N engine replicas, each with its
// own model copy, KV pools and scheduler, and a router that sends each request to one of them.
//
// The router prefers the replica that served the longest page-aligned prefix of the prompt before
// (its prefix cache likely holds it: multi-turn chats and shared system prompts stay on one
// replica), unless that replica is busier than the least-loaded one by more than `slack` requests;
// otherwise the least-loaded replica (its requests from this router not yet finished) takes it. The prefix record is the
// router's own (chained hashes of the prompt's first pages), not a query into the engines' caches,
// which belong to their engine threads.
#pragma once
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "api/engine_client.h"

namespace gs::api {

class ReplicaRouter final : public EngineClient {
 public:
  // page_size: the engines' KV page (the prefix granularity); slack: how many more requests the
  // prefix-holding replica may carry than the least-loaded one and still be chosen.
  ReplicaRouter(std::vector<Engine*> replicas, int page_size, int slack = 4);

  Engine::SubmitResult submit(GenerationRequest req) override;
  void abort(const std::string& request_id) override;
  EngineStats stats() const override;  // summed over the replicas
  RequestLimits limits() const override;

  // The replica submit() would choose for this prompt now (tests, logs).
  int choose(const std::vector<int>& prompt) const;
  int num_replicas() const { return int(replicas_.size()); }

 private:
  std::vector<uint64_t> prefix_hashes(const std::vector<int>& prompt) const;
  // advance: take the round-robin turn (submit) rather than only look at it (choose).
  int choose_locked(const std::vector<uint64_t>& hashes, const std::vector<int>& loads, bool advance) const;
  std::vector<int> loads_locked() const;  // prunes finished requests first

  std::vector<Engine*> replicas_;
  int page_size_, slack_;
  mutable std::mutex mu_;
  std::unordered_map<uint64_t, int> owner_;  // prefix hash -> replica that last served it
  mutable unsigned next_ = 0;                // round-robin among equally loaded replicas
  // Per replica, the output channels of the requests it was given: unfinished ones are its load.
  mutable std::vector<std::vector<std::shared_ptr<OutputChannel>>> outstanding_;
};

// EngineStats of several engines as one: counts and pages summed, per-position counters
// summed element-wise, the page size of the first.
EngineStats sum_stats(const std::vector<EngineStats>& parts);

}  // namespace gs::api
