#include "engine/engine.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <random>
#include <thread>
#include <unordered_set>

#include "core/error.h"
#include "core/log.h"
#include "engine/draft_proposer.h"
#include "engine/engine_setup.h"
#include "engine/scheduler.h"
#include "engine/step_outputs.h"
#include "runner/model_runner.h"

namespace gs {

struct Engine::Impl {
  std::shared_ptr<Gemma4Model> model;
  EngineOptions opts;
  EngineSetup setup;
  KvCache cache;
  std::unique_ptr<KvManager> kv;
  std::unique_ptr<Scheduler> sched;
  std::unique_ptr<ModelRunner> runner;
  std::shared_ptr<DraftSource> proposer;  // speculative decoding, when configured
  StepOutputs outputs;

  // Shared with submit()/abort()/stats(), guarded by mu.
  mutable std::mutex mu;
  std::condition_variable cv;
  std::vector<std::unique_ptr<Sequence>> inbox;
  std::vector<std::string> abort_inbox;
  std::unordered_set<std::string> live_ids;  // submitted and not yet finished
  int num_waiting = 0;                       // in the scheduler's queue after the last step
  bool started = false, stopping = false;
  EngineStats stats;
  std::mt19937_64 seed_rng;

  std::thread thread;

  // Overlapped scheduling (docs/design.md): the step launched and not yet collected, and finished
  // sequences kept alive until every launched step that may name them has been collected.
  struct Launched {
    StepPlan plan;
    uint64_t index = 0;
    std::chrono::steady_clock::time_point launched_at;
  };
  std::chrono::steady_clock::time_point last_collected;  // when the previous step's results came back
  std::optional<Launched> in_flight;
  uint64_t launches = 0;
  std::vector<std::pair<uint64_t, std::unique_ptr<Sequence>>> retired;  // (newest launch naming it, seq)

  void loop();
  bool run_one_step();
  void launch(StepPlan plan);
  // Sequences the step in flight samples get a placeholder token, then the next step is scheduled
  // and launched behind it. Returns whether one was launched.
  bool launch_ahead(const StepPlan& running);
  // After a failed step: forgets launched steps and fails every request they may have touched.
  void fail_all(const std::string& error);
  // The counters of a collected step (and of the tokens the step behind it will discard).
  void count_step(const Launched& cur, std::chrono::steady_clock::time_point collected, bool overlapped,
                  const std::vector<StepOutputs::Finished>& done);
  // Moves submitted requests into the scheduler's queue and ends aborted ones.
  void take_inbox();
  // Frees the sequence, then pushes its last output (an abort/error one unless `last` is given),
  // so a client that sees the end also sees the pages back in stats().
  void finish(Sequence* s, FinishReason why, const std::string& error = "", RequestOutput* last = nullptr);
  void publish_stats();
  // Speculative decoding: drafts for every sequence of the collected step that sampled, may
  // speculate and goes on.
  void draft_after(const StepPlan& plan, const std::vector<RunnerOutput>& outs);
  // --speculative-disable-by-batch-size: more sequences run than drafting allows.
  bool drafting_paused() const;
  // Whether the step after `cur` may be launched before `cur` is collected (see draft_after).
  bool may_overlap(const StepPlan& cur) const;
};

Engine::Engine(std::shared_ptr<Gemma4Model> model, EngineOptions opts) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  GS_CHECK(model, "engine: no model");
  m.model = std::move(model);
  m.opts = std::move(opts);
  // The memory plan, the cache and the runner live on the model's device, whichever device this
  // thread used before (data-parallel replicas are made one after another on one thread).
  m.model->backend().make_current();
  m.setup = setup_engine(*m.model, m.opts);
  log::info("{}", m.setup.plan.describe());
  if (!m.setup.plan.warning.empty()) log::warn("{}", m.setup.plan.warning);
  m.cache = m.model->backend().allocate_kv_cache(m.model->config().kv_layout(), m.opts.page_size, m.setup.plan.num_pages);
  // The drafter's sliding layers read the last W+1 keys before the newest token (gemma4_drafter.h):
  // sliding pages stay two positions longer than a decode query needs.
  const bool speculative = m.opts.speculative.enabled();
  const int window = m.model->config().sliding_window + (speculative ? 2 : 0);
  m.kv = std::make_unique<KvManager>(m.opts.page_size, window, m.setup.plan.num_pages, m.opts.enable_prefix_caching);
  m.sched = std::make_unique<Scheduler>(*m.kv, m.setup.scheduler);
  DecodeGraphOptions graphs;
  if (!m.opts.enforce_eager) {
    graphs.max_batch = m.opts.cuda_graph_max_bs > 0 ? m.opts.cuda_graph_max_bs : m.opts.max_num_seqs;
    graphs.max_kv_len = m.setup.max_model_len;
    if (speculative) graphs.max_q_len = 1 + m.opts.speculative.num_speculative_tokens;
  }
  m.runner = std::make_unique<ModelRunner>(*m.model, m.cache, m.opts.page_size, m.setup.scheduler.max_num_batched_tokens,
                                           m.setup.scheduler.max_logit_rows, graphs);
  if (m.model->backend().supports_graphs())
    log::info("decode steps: {}", m.opts.enforce_eager ? "eager (--enforce-eager)"
                                                        : fmt::format("CUDA graphs up to batch {}, captured on first use",
                                                                      std::min(graphs.max_batch, m.opts.max_num_seqs)));
  if (speculative) {
    m.proposer = m.opts.speculative.source;
    if (!m.proposer)
      m.proposer = std::make_shared<MtpDraftSource>(m.opts.speculative.drafter, m.opts.speculative.num_speculative_tokens,
                                                    m.opts.max_num_seqs, m.opts.page_size, m.cache,
                                                    m.setup.max_model_len, !m.opts.enforce_eager);
    m.outputs.forced_accept_rate = m.opts.speculative.forced_accept_rate;
    if (m.outputs.forced_accept_rate > 0)
      log::warn("speculative decoding: drafts pass with probability {} whatever the target says "
                "(--speculative-accept-rate, a benchmark switch): outputs are meaningless",
                m.outputs.forced_accept_rate);
    log::info("speculative decoding: {} draft tokens per round from {} (greedy drafts, verified by rejection "
              "sampling){}; overlapped scheduling {}",
              m.proposer->num_speculative_tokens(),
              m.opts.speculative.source ? std::string("a scripted source")
                                        : fmt::format("a {}-layer MTP assistant",
                                                      m.opts.speculative.drafter->config().num_layers),
              m.opts.speculative.disable_by_batch_size > 0
                  ? fmt::format(", none while more than {} requests run", m.opts.speculative.disable_by_batch_size)
                  : std::string(),
              m.opts.disable_overlap_schedule            ? "off"
              : m.opts.speculative.disable_by_batch_size ? "only while drafting is paused"
                                                         : "off while drafting");
  }
  m.outputs.eos_ids = m.opts.eos_token_ids.empty() ? m.model->config().eos_token_ids : m.opts.eos_token_ids;
  m.outputs.max_model_len = m.setup.max_model_len;
  m.outputs.backend = &m.model->backend();
  m.seed_rng.seed(m.opts.seed ? m.opts.seed : std::random_device{}());
  m.publish_stats();
}

Engine::~Engine() { stop(); }

void Engine::start() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  GS_CHECK(!impl_->stopping, "engine: start() after stop()");
  if (impl_->started) return;
  impl_->started = true;
  impl_->thread = std::thread([this] { impl_->loop(); });
}

void Engine::stop() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (impl_->stopping && !impl_->thread.joinable()) return;
    impl_->stopping = true;
  }
  impl_->cv.notify_all();
  if (impl_->thread.joinable()) impl_->thread.join();
  // Whatever is still queued (also when the thread never ran) ends with an abort.
  Impl& m = *impl_;
  m.take_inbox();
  while (!m.sched->running().empty()) m.finish(m.sched->running().back(), FinishReason::Abort);
  while (!m.sched->waiting().empty()) m.finish(m.sched->waiting().back(), FinishReason::Abort);
  m.publish_stats();
}

Engine::SubmitResult Engine::submit(GenerationRequest req) {
  Impl& m = *impl_;
  auto reject = [](int status, std::string msg, std::string param = "") {
    return SubmitResult{false, status, std::move(msg), std::move(param)};
  };
  if (auto problem = validate_request(req, request_limits())) return reject(400, problem->message(), problem->param);
  auto seq = std::make_unique<Sequence>();
  seq->tokens = req.prompt;
  seq->prompt_len = int(req.prompt.size());
  seq->pages.cacheable = true;
  seq->req = std::move(req);
  set_image_keys(seq->pages, seq->req.mm_block, seq->req.images, m.kv->page_size());
  if (seq->req.sampling.prompt_logprobs) seq->prompt_logprobs.resize(seq->prompt_len);
  if (seq->req.sampling.repetition_penalty != 1.f) {
    seq->prompt_set_ids = seq->req.prompt;
    std::sort(seq->prompt_set_ids.begin(), seq->prompt_set_ids.end());
    seq->prompt_set_ids.erase(std::unique(seq->prompt_set_ids.begin(), seq->prompt_set_ids.end()),
                              seq->prompt_set_ids.end());
  }
  {
    std::lock_guard<std::mutex> lock(m.mu);
    if (m.stopping) return reject(503, "the engine is shutting down");
    if (m.live_ids.count(seq->req.id)) return reject(400, fmt::format("duplicate request id '{}'", seq->req.id));
    if (m.num_waiting + int(m.inbox.size()) >= m.opts.max_queue)
      return reject(429, fmt::format("too many requests waiting ({}, --max-queue {})",
                                     m.num_waiting + int(m.inbox.size()), m.opts.max_queue));
    seq->seed = seq->req.sampling.seed ? *seq->req.sampling.seed : m.seed_rng();
    m.live_ids.insert(seq->req.id);
    m.inbox.push_back(std::move(seq));
  }
  m.cv.notify_all();
  return SubmitResult{true, 200, "", ""};
}

void Engine::abort(const std::string& request_id) {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (!impl_->live_ids.count(request_id)) return;
    impl_->abort_inbox.push_back(request_id);
  }
  impl_->cv.notify_all();
}

EngineStats Engine::stats() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->stats;
}
const ModelConfig& Engine::model_config() const { return impl_->model->config(); }
int Engine::max_model_len() const { return impl_->setup.max_model_len; }
RequestLimits Engine::request_limits() const {
  return RequestLimits{impl_->model->config().vocab_size, impl_->setup.max_model_len,
                       impl_->setup.scheduler.max_num_batched_tokens};
}
const EngineOptions& Engine::options() const { return impl_->opts; }
std::string Engine::memory_plan() const { return impl_->setup.plan.describe(); }

// ---- the engine thread ----------------------------------------------------------------------

void Engine::Impl::take_inbox() {
  std::vector<std::unique_ptr<Sequence>> fresh;
  std::vector<std::string> aborts;
  {
    std::lock_guard<std::mutex> lock(mu);
    fresh.swap(inbox);
    aborts.swap(abort_inbox);
  }
  for (auto& s : fresh) sched->add(std::move(s));
  for (const std::string& id : aborts)
    if (Sequence* s = sched->find(id)) finish(s, FinishReason::Abort);
}

void Engine::Impl::finish(Sequence* s, FinishReason why, const std::string& error, RequestOutput* last) {
  RequestOutput out;
  if (last) {
    out = std::move(*last);
  } else {
    out.finish = why;
    out.error = error;
    out.prompt_tokens = s->prompt_len;
    out.cached_prompt_tokens = s->cached_prompt_tokens;
    out.completion_tokens = s->num_generated() - (s->pending_row >= 0 ? 1 : 0);  // not the placeholder
  }
  std::shared_ptr<OutputChannel> channel = s->req.output;
  std::string id = s->req.id;
  retired.emplace_back(launches, sched->remove(s));
  {
    std::lock_guard<std::mutex> lock(mu);
    live_ids.erase(id);
  }
  publish_stats();
  channel->push(std::move(out));
}

void Engine::Impl::loop() {
  // CUDA binds a device per thread: this thread launches on the model's device (a replica's or
  // tensor-parallel rank 0's, not the process's default).
  model->backend().make_current();
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] {
        return stopping || !inbox.empty() || !abort_inbox.empty() || !sched->idle() || in_flight.has_value();
      });
      if (stopping) break;
    }
    take_inbox();
    if (sched->idle() && !in_flight) {
      publish_stats();
      continue;
    }
    try {
      run_one_step();
    } catch (const std::exception& e) {
      // A failed step fails the requests it touched; the engine keeps serving the others.
      log::error("engine step failed: {}", e.what());
      fail_all(e.what());
    }
    publish_stats();
  }
  // stop(): let the device finish what was launched before the requests are aborted.
  if (in_flight) {
    runner->reset();
    in_flight.reset();
  }
}

void Engine::Impl::fail_all(const std::string& error) {
  runner->reset();
  in_flight.reset();
  std::vector<Sequence*> victims(sched->running().begin(), sched->running().end());
  // Preempted sequences scheduled ahead hold a placeholder token that will never be filled in.
  for (Sequence* s : sched->waiting())
    if (s->pending_row >= 0) victims.push_back(s);
  for (Sequence* s : victims) finish(s, FinishReason::Error, error);
  retired.clear();
}

void Engine::Impl::launch(StepPlan plan) {
  const auto t0 = std::chrono::steady_clock::now();
  outputs.prepare(plan);
  runner->launch(plan.steps);
  in_flight = Launched{std::move(plan), ++launches, t0};
}

bool Engine::Impl::launch_ahead(const StepPlan& running) {
  int row = 0;
  bool any = false;
  for (size_t i = 0; i < running.size(); ++i) {
    if (!running.steps[i].sample) continue;
    Sequence* s = running.seqs[i];
    const int r = row++;
    if (s->state != Sequence::State::Running || !outputs.can_run_ahead(*s)) continue;
    s->tokens.push_back(0);  // filled in when the running step is collected
    s->pending_row = r;
    any = true;
  }
  // Without a placeholder only prefill could run ahead; it waits a step so that chunks and
  // admission see the freshest state.
  if (!any) return false;
  StepPlan next = sched->schedule();
  if (opts.debug_page_checks) sched->check_pages(&next);
  if (next.empty()) return false;
  launch(std::move(next));
  return true;
}

bool Engine::Impl::run_one_step() {
  if (!in_flight) {
    StepPlan plan = sched->schedule();
    if (opts.debug_page_checks) sched->check_pages(&plan);
    if (plan.empty()) {
      // Nothing runs and nothing can be admitted: the head of the queue can never fit.
      if (sched->running().empty() && !sched->waiting().empty())
        finish(sched->waiting().front(), FinishReason::Error, "the request does not fit in the KV cache");
      return false;
    }
    launch(std::move(plan));
  }
  Launched cur = std::move(*in_flight);
  in_flight.reset();
  // While the device runs `cur`: new requests and aborts (an aborted request's pages may be reused
  // only by steps launched later, which the device runs after `cur`), the bookkeeping of `cur`,
  // and, when overlapping, the next step.
  take_inbox();
  sched->commit(cur.plan);
  const bool overlapped =
      !opts.disable_overlap_schedule && may_overlap(cur.plan) && runner->can_launch_ahead() && launch_ahead(cur.plan);
  std::vector<RunnerOutput> outs = runner->collect();
  const auto collected = std::chrono::steady_clock::now();
  std::vector<StepOutputs::Finished> done = outputs.apply(cur.plan, outs);
  for (size_t i = 0; i < cur.plan.size(); ++i)
    if (outputs.accepted[i] > 0) sched->accept(cur.plan.seqs[i], outputs.accepted[i]);
  count_step(cur, collected, overlapped, done);
  for (auto& f : done) finish(f.seq, f.last.finish, "", &f.last);
  if (proposer) draft_after(cur.plan, outs);
  // Sequences no launched step names any more.
  std::erase_if(retired, [&](const auto& r) { return r.first <= cur.index; });
  return true;
}

bool Engine::Impl::drafting_paused() const {
  const int off_above = opts.speculative.disable_by_batch_size;
  return off_above > 0 && int(sched->running().size()) > off_above;
}

bool Engine::Impl::may_overlap(const StepPlan& cur) const {
  if (!proposer) return true;
  // A verify's successor depends on how many drafts it accepts, and drafting needs the hidden
  // state of the step just collected: with a drafter, steps overlap only while drafting is paused
  // and no drafted token is waiting to be verified.
  if (!drafting_paused()) return false;
  for (const SequenceStep& st : cur.steps)
    if (st.num_drafts > 0) return false;
  for (const Sequence* s : sched->running())
    if (!s->drafts.empty() || s->drafts_in_tokens > 0) return false;
  return true;
}

void Engine::Impl::draft_after(const StepPlan& plan, const std::vector<RunnerOutput>& outs) {
  // A step launched behind this one already carries these sequences on (and overwrote the hidden
  // states); drafting resumes after a step that nothing overtook.
  if (in_flight || drafting_paused()) return;
  std::vector<DraftRequest> reqs;
  for (size_t i = 0; i < plan.size(); ++i) {
    Sequence* s = plan.seqs[i];
    if (!plan.steps[i].sample || s->state != Sequence::State::Running) continue;
    const int k = outputs.draft_budget(*s, proposer->num_speculative_tokens());
    // The row that produced the newest token: the verify's first rejected row, or its bonus row.
    if (k > 0) reqs.push_back({s, outs[i].hidden_row + outputs.accepted[i], k});
  }
  proposer->propose(reqs, runner->last_hidden(), cache);
}

void Engine::Impl::count_step(const Launched& cur, std::chrono::steady_clock::time_point collected, bool overlapped,
                              const std::vector<StepOutputs::Finished>& done) {
  // A step's time: from its launch, or from the previous step's results when it was launched
  // behind that one (the device ran them back to back), to its own results.
  const double step_s = std::chrono::duration<double>(collected - std::max(cur.launched_at, last_collected)).count();
  last_collected = collected;
  const int kind = std::any_of(cur.plan.steps.begin(), cur.plan.steps.end(),
                               [](const SequenceStep& st) { return st.q_len > 1; })
                       ? EngineStats::kPrefillStep
                       : EngineStats::kDecodeStep;
  // Tokens the step launched behind `cur` computes for requests `cur` finished.
  uint64_t discarded = 0;
  if (in_flight)
    for (const auto& f : done)
      discarded += uint64_t(std::count(in_flight->plan.seqs.begin(), in_flight->plan.seqs.end(), f.seq));
  std::lock_guard<std::mutex> lock(mu);
  stats.steps++;
  stats.steps_of_kind[kind]++;
  stats.step_seconds[kind] += step_s;
  stats.overlapped_steps += overlapped ? 1 : 0;
  stats.discarded_tokens += discarded;
  stats.spec_drafts = outputs.spec.rounds;
  stats.spec_draft_tokens = outputs.spec.draft_tokens;
  stats.spec_accepted_tokens = outputs.spec.accepted_tokens;
  stats.spec_accepted_per_position = outputs.spec.accepted_per_position;
  stats.generation_tokens += outputs.last_generated;
  stats.prompt_tokens += outputs.last_prompt_tokens;
}

void Engine::Impl::publish_stats() {
  std::lock_guard<std::mutex> lock(mu);
  stats.running = int(sched->running().size());
  stats.waiting = int(sched->waiting().size()) + int(inbox.size());
  num_waiting = int(sched->waiting().size());
  stats.page_size = opts.page_size;
  for (int g = 0; g < kNumKvGroups; ++g) {
    const PagePool& pool = kv->pool(KvGroup(g));
    stats.pages_used[g] = pool.num_used() - pool.num_evictable();
    stats.pages_peak[g] = std::max(stats.pages_peak[g], stats.pages_used[g]);
    stats.pages_cached[g] = pool.num_evictable();
    stats.pages_total[g] = pool.num_pages();
  }
  stats.prefix_queries = sched->counters().prefix_queries;
  stats.prefix_hits = sched->counters().prefix_hits;
  stats.preemptions = sched->counters().preemptions;
}

}  // namespace gs
