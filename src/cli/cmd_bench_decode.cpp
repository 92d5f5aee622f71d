// gemmaserve bench-decode: whole-model decode step latency of a real model shape, next to the floor
// that streaming its weights (and the KV it must read) at the measured HBM bandwidth implies.
//
// What a step is here: B sequences, each with `context` cached tokens, decode one token each;
// the sampled ids feed the next step. The K/V pools are filled with random values instead of being
// prefilled (the decode kernels read the same bytes either way), so a 31B step at 4k context is
// measurable in seconds. The figure includes the host's work per step as the engine does it: the
// model runner builds the step, replays the decode step's CUDA graph (unless --enforce-eager),
// samples on the device and copies the sampled ids back. By default each step waits for the
// previous one's ids; with --overlap the next step is launched first, its input ids copied from
// the previous step's on the device, as the engine's scheduler runs decode (model_runner.h), so
// the host's work between steps hides under the device's.
//
// With --num-speculative-tokens K (a list), each step is a speculative verify instead: every
// sequence runs 1 + K rows (its newest token and K drafts) and all of them are kept, as if every
// draft were accepted, so positions advance by 1 + K a step. With --speculative-model the MTP
// assistant drafts those K tokens after each verify (MtpDraftSource, as the engine runs it), and the
// draft round is timed apart from the verify: the rows of issue 29's step table.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/command.h"
#include "cli/kernel_policy_option.h"
#include "core/error.h"
#include "core/log.h"
#include "engine/draft_proposer.h"
#include "kernels/backends.h"
#include "model/gemma4_drafter.h"
#include "model/gemma4_model.h"
#include "model/model_source.h"
#include "runner/model_runner.h"
#include "runner/tensor_parallel_model.h"

namespace gs::cli {
namespace {

struct BenchDecodeOptions {
  std::string model = "e2b";
  std::string load_format = "dummy";
  std::string backend = "cuda";
  std::string kernel_policy;  // --kernel-policy items
  std::string batches = "1";
  int context = 1024;
  int steps = 32;
  int warmup = 4;
  int page_size = 16;
  bool enforce_eager = false;
  bool overlap = false;
  double hbm_tb_s = 4.29;  // engine-design.md: H200 copy bandwidth (read + write), PyTorch
  std::string json_out;
  int tensor_parallel_size = 1;
  bool disable_custom_all_reduce = false;
  // Each sequence's sampling (as in a request); the default, temperature 0, is greedy.
  float temperature = 0.f, top_p = 1.f;
  int top_k = 0;
  // Speculative verify steps (and draft rounds with an assistant): the K values to time; empty: plain
  // decode steps.
  std::string speculative_tokens;
  std::string speculative_model;
};

// Bytes one decode step must read: every weight once, except the embedding rows (gathered; the
// tied LM head still reads the whole table), the PLE table (gathered) and the experts no token
// of the batch routes to; plus the K/V each sequence attends over.
struct StepBytes {
  double weights = 0, kv = 0;
};

StepBytes step_bytes(const ModelConfig& cfg, const ModelWeights& w, int batch, int context) {
  StepBytes b;
  b.weights = double(w.bytes()) - double(w.ple_table.nbytes());
  if (cfg.moe && cfg.num_experts > 0) {
    double experts = 0;
    for (const auto& l : w.layers) experts += double(l.experts_gate_up.nbytes() + l.experts_down.nbytes());
    // Expected distinct experts per layer when B tokens each pick k of E uniformly.
    const double E = cfg.num_experts, k = cfg.top_k_experts;
    const double active = E * (1.0 - std::pow(1.0 - k / E, batch));
    b.weights -= experts * (1.0 - active / E);
  }
  const double elem = 2.0;  // bf16 KV
  for (const auto& l : cfg.layers) {
    if (!l.owns_kv) continue;  // shared layers read their source's cache: counted once
    const int visible = l.type == LayerType::Sliding ? std::min(context + 1, l.sliding_window) : context + 1;
    b.kv += 2.0 * visible * l.num_kv_heads * l.head_dim * elem * batch;
  }
  return b;
}

std::vector<int> parse_int_list(const std::string& s, const char* flag) {
  std::vector<int> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    int v = 0;
    try {
      size_t used = 0;
      v = std::stoi(item, &used);
      GS_CHECK(used == item.size(), "");
    } catch (const std::exception&) {
      throw Error("{} '{}': expected comma-separated positive integers", flag, s);
    }
    GS_CHECK(v > 0, "{} '{}': values must be positive", flag, s);
    out.push_back(v);
  }
  GS_CHECK(!out.empty(), "{} '{}': expected comma-separated positive integers", flag, s);
  return out;
}

struct Result {
  int batch = 0;
  int k = 0;             // draft tokens verified a step (0: plain decode steps)
  double draft_ms = 0;   // the assistant's draft round of k steps, when one drafts
  double ms_per_step = 0, floor_ms = 0, weight_gb = 0, kv_gb = 0;
  uint64_t graph_steps = 0, eager_steps = 0;  // of warm-up and timed steps
  uint64_t tokens_fnv1a = 0;  // of every sampled id, sequence by sequence: equal runs sample equally
};

// k > 0: verify steps of 1 + k rows a sequence; drafter: also time its draft rounds of k steps.
Result bench_one(Gemma4Model& model, Backend& be, int batch, const BenchDecodeOptions& o, int k = 0,
                 const std::shared_ptr<Gemma4Drafter>& drafter = nullptr) {
  const ModelConfig& cfg = model.config();
  const int P = o.page_size;
  const int q = 1 + k;  // rows a sequence runs each step; positions advance by as many
  const int total = o.context + (o.warmup + o.steps) * q + 1;
  const int full_pages_per_seq = (total + P - 1) / P;
  int window = 0;
  for (const auto& l : cfg.layers) window = std::max(window, l.sliding_window);
  // The drafter's sliding layers read two keys further back than a decode row (engine.cpp).
  if (drafter && window > 0) window += 2;
  // Sliding pages are reused cyclically: a window spans at most ceil(W/P) + 1 logical pages.
  const int sliding_pages_per_seq = window > 0 ? std::min(full_pages_per_seq, (window + q + P - 1) / P + 2) : 0;
  int pages[kNumKvGroups] = {0, 0};
  if (cfg.num_cache_layers(KvGroup::Sliding) > 0) pages[int(KvGroup::Sliding)] = batch * sliding_pages_per_seq;
  if (cfg.num_cache_layers(KvGroup::Full) > 0) pages[int(KvGroup::Full)] = batch * full_pages_per_seq;
  KvCache cache = be.allocate_kv_cache(cfg.kv_layout(), P, pages);

  std::vector<std::vector<int>> tables[kNumKvGroups];
  for (int g = 0; g < kNumKvGroups; ++g) tables[g].assign(size_t(batch), {});
  // Each sequence's known tokens: `context` arbitrary ones (their K/V is the random fill), then
  // what the model samples.
  std::vector<std::vector<int>> tokens(static_cast<size_t>(batch));
  for (int s = 0; s < batch; ++s)
    for (int i = 0; i <= o.context; ++i) tokens[size_t(s)].push_back((s * 7919 + i * 31 + 17) % cfg.vocab_size);

  DecodeGraphOptions graphs;
  if (!o.enforce_eager) graphs = DecodeGraphOptions{batch, total, q};
  // Tensor parallel: model is rank 0's, and its runner runs every step on every rank's thread.
  ModelRunner runner(model, cache, P, batch * q, batch * q, graphs);
  std::unique_ptr<MtpDraftSource> drafts;
  if (drafter) drafts = std::make_unique<MtpDraftSource>(drafter, k, batch, P, cache, total, !o.enforce_eager);
  // The pretend context's K/V: random, on every rank.
  runner.for_each_rank_cache([](Backend& rank_be, KvCache& c) {
    for (auto& pool : c.pools) {
      if (pool.k.defined()) rank_be.fill_uniform(pool.k, 11, 1.f);
      if (pool.v.defined()) rank_be.fill_uniform(pool.v, 12, 1.f);
    }
  });

  // Launches the step whose new token sits at position `pos`. With `feedback` that token is the
  // one the step still in flight samples: a placeholder here, copied on the device by the runner.
  // Verify steps: the drafts each sequence's next step carries (the assistant's, or arbitrary ids).
  std::vector<std::vector<int>> next_drafts(static_cast<size_t>(batch));
  auto launch_step = [&](int pos, bool feedback) {
    for (int s = 0; s < batch; ++s) {
      auto& full = tables[int(KvGroup::Full)][size_t(s)];
      auto& sliding = tables[int(KvGroup::Sliding)][size_t(s)];
      const int needed = (pos + k) / P + 1;
      if (pages[int(KvGroup::Full)] > 0)
        while (int(full.size()) < needed) full.push_back(s * full_pages_per_seq + int(full.size()));
      if (pages[int(KvGroup::Sliding)] > 0) {
        while (int(sliding.size()) < needed) {
          const int i = int(sliding.size());
          sliding.push_back(s * sliding_pages_per_seq + i % sliding_pages_per_seq);
        }
        const int first_visible = std::max(0, pos - window + 1) / P;
        for (int i = 0; i < first_visible; ++i) sliding[size_t(i)] = -1;
      }
      if (feedback) tokens[size_t(s)].push_back(0);
      auto& t = tokens[size_t(s)];
      for (int j = 0; j < k; ++j)
        t.push_back(j < int(next_drafts[size_t(s)].size()) ? next_drafts[size_t(s)][size_t(j)]
                                                           : (t.back() * 31 + 7) % cfg.vocab_size);
    }
    std::vector<SequenceStep> seqs(static_cast<size_t>(batch));
    for (int s = 0; s < batch; ++s) {
      SequenceStep& rs = seqs[size_t(s)];
      rs.tokens = &tokens[size_t(s)];
      rs.start = pos;
      rs.q_len = q;
      rs.num_drafts = k;
      rs.sample = true;
      rs.sampling.temperature = o.temperature, rs.sampling.top_p = o.top_p, rs.sampling.top_k = o.top_k;
      rs.sampling.seed = uint64_t(s) + 1, rs.sampling.step = uint64_t(pos);
      for (int g = 0; g < kNumKvGroups; ++g)
        if (pages[g] > 0) rs.page_table[g] = &tables[g][size_t(s)];
      if (feedback) rs.feedback_row = s;  // every row samples, in sequence order
    }
    runner.launch(seqs);
  };
  // Waits for the oldest step in flight and writes its sampled id at position `pos` (a verify's: its
  // last row's, the bonus token after k accepted drafts).
  std::vector<RunnerOutput> outs;
  auto collect_into = [&](int pos) {
    outs = runner.collect();
    for (int s = 0; s < batch; ++s) {
      auto& t = tokens[size_t(s)];
      if (int(t.size()) == pos) t.push_back(outs[size_t(s)].tokens.at(size_t(k)));
      else t[size_t(pos)] = outs[size_t(s)].tokens.at(size_t(k));
    }
  };
  // The assistant drafts k tokens after each sequence's newest one, seeded by the bonus row's hidden
  // state; the next verify carries them.
  std::vector<Sequence> draft_seqs(static_cast<size_t>(batch));
  double draft_secs = 0;
  auto draft_round = [&](bool timed) {
    std::vector<DraftRequest> reqs;
    for (int s = 0; s < batch; ++s) {
      Sequence& d = draft_seqs[size_t(s)];
      d.tokens = tokens[size_t(s)];
      d.num_computed = int(d.tokens.size()) - 1;
      for (int g = 0; g < kNumKvGroups; ++g) d.pages.table[g] = tables[g][size_t(s)];
      d.drafts.clear();
      reqs.push_back({&d, outs[size_t(s)].hidden_row + k, k});
    }
    const auto t = std::chrono::steady_clock::now();
    drafts->propose(reqs, runner.last_hidden(), cache);
    if (timed) draft_secs += std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
    for (int s = 0; s < batch; ++s) next_drafts[size_t(s)] = draft_seqs[size_t(s)].drafts;
  };
  // n steps from position `cached`; returns the next position. Overlapped runs keep one step in
  // flight and drain it at the end, so each phase starts and ends with an idle device.
  auto run_steps = [&](int cached, int n, bool timed) {
    if (!o.overlap) {
      for (int i = 0; i < n; ++i, cached += q) {
        launch_step(cached, false);
        collect_into(cached + q);
        if (drafts) draft_round(timed);
      }
      return cached;
    }
    for (int i = 0; i < n; ++i, ++cached) {
      launch_step(cached, i > 0);
      if (i > 0) collect_into(cached);  // the previous step's ids, the token this step read
    }
    if (n > 0) collect_into(cached);
    return cached;
  };

  int cached = run_steps(o.context, o.warmup, false);
  be.synchronize();
  const auto t0 = std::chrono::steady_clock::now();
  run_steps(cached, o.steps, true);
  be.synchronize();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  const StepBytes bytes = step_bytes(cfg, model.weights(), batch, o.context);
  Result r;
  r.batch = batch;
  r.k = k;
  r.draft_ms = draft_secs * 1e3 / o.steps;
  r.ms_per_step = (secs - draft_secs) * 1e3 / o.steps;
  r.weight_gb = bytes.weights / 1e9;
  r.kv_gb = bytes.kv / 1e9;
  r.floor_ms = (bytes.weights + bytes.kv) / (o.hbm_tb_s * 1e12) * 1e3;
  r.tokens_fnv1a = 14695981039346656037ull;
  for (const auto& t : tokens)
    for (size_t i = size_t(o.context) + 1; i < t.size(); ++i)
      r.tokens_fnv1a = (r.tokens_fnv1a ^ uint32_t(t[i])) * 1099511628211ull;
  const ModelRunner::Counters c = runner.counters();
  r.graph_steps = c.graph_steps;
  r.eager_steps = c.eager_steps;
  return r;
}

std::string sampling_label(const BenchDecodeOptions& o) {
  if (o.temperature <= 0.f) return "greedy";
  std::ostringstream os;
  os << "temperature " << o.temperature;
  if (o.top_k > 0) os << ", top_k " << o.top_k;
  if (o.top_p < 1.f) os << ", top_p " << o.top_p;
  return os.str();
}

void print_results(const BenchDecodeOptions& o, const std::string& device, const std::vector<Result>& results);

int run_single(const BenchDecodeOptions& o, const std::vector<int>& batches, const std::vector<int>& ks) {
  std::unique_ptr<Backend> be = create_backend(o.backend, backend_options(o.kernel_policy));
  const auto t_load = std::chrono::steady_clock::now();
  LoadedModel loaded = load_model(ModelSpec{o.model, parse_load_format(o.load_format)}, *be);
  const ModelConfig& cfg = loaded.config;
  ModelWeights& weights = loaded.weights;
  be->synchronize();
  log::info("bench-decode: {} on {}: {:.2f} GB of weights ready in {:.1f} s", o.model, be->name(),
            double(weights.bytes()) / 1e9,
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t_load).count());
  const int max_batch = *std::max_element(batches.begin(), batches.end());
  const int max_rows = max_batch * (1 + (ks.empty() ? 0 : *std::max_element(ks.begin(), ks.end())));
  Gemma4Model model(cfg, std::move(weights), *be);
  model.reserve(max_rows, max_rows);

  std::vector<Result> results;
  if (ks.empty()) {
    for (int b : batches) results.push_back(bench_one(model, *be, b, o));
  } else {
    std::shared_ptr<Gemma4Drafter> drafter;
    if (!o.speculative_model.empty()) {
      // Dummy assistants from another seed than the target's, as serve makes them.
      LoadedModel a = load_model(ModelSpec{o.speculative_model, parse_load_format(o.load_format), 1}, *be);
      GS_CHECK(a.config.is_assistant, "--speculative-model {}: {} is not an MTP assistant", o.speculative_model,
               a.config.architecture);
      a.config.bind_assistant_to(cfg);
      drafter = std::make_shared<Gemma4Drafter>(a.config, std::move(a.weights), model, *be);
      log::info("bench-decode: {} ({} layers) drafts for {}", o.speculative_model, drafter->config().num_layers,
                o.model);
    }
    for (int b : batches)
      for (int k : ks) results.push_back(bench_one(model, *be, b, o, k, drafter));
  }
  print_results(o, be->name(), results);
  return 0;
}

// Rank 0's runner launches every step on every rank's thread (runner/model_runner.h), as serving
// does; rank 0 samples. Rank 0's timing is reported; the floor counts rank 0's shard of the
// weights and KV.
int run_tensor_parallel(const BenchDecodeOptions& o, const std::vector<int>& batches) {
  const auto t_load = std::chrono::steady_clock::now();
  GpuCollectiveOptions collectives;
  collectives.custom_all_reduce = !o.disable_custom_all_reduce;
  TensorParallelModel tp(ModelSpec{o.model, parse_load_format(o.load_format)}, o.backend, o.tensor_parallel_size,
                         backend_options(o.kernel_policy), collectives);
  const int max_batch = *std::max_element(batches.begin(), batches.end());
  tp.run([&](int r) { tp.model(r).reserve(max_batch, max_batch); });
  log::info("bench-decode: {} on {} ready in {:.1f} s", o.model, tp.describe(),
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t_load).count());
  std::vector<Result> results;
  // This thread drives rank 0 (its device made current here) and through rank 0's runner every
  // rank, as the engine does when serving.
  tp.backend(0).make_current();
  for (int b : batches) results.push_back(bench_one(tp.model(0), tp.backend(0), b, o));
  print_results(o, fmt::format("TP{} {}", o.tensor_parallel_size, tp.backend(0).name()), results);
  return 0;
}

int run(const BenchDecodeOptions& o) {
  GS_CHECK(o.context >= 0 && o.steps > 0 && o.warmup >= 0, "bench-decode: --context >= 0, --steps > 0, --warmup >= 0");
  GS_CHECK(o.tensor_parallel_size >= 1, "--tensor-parallel-size must be at least 1 (got {})", o.tensor_parallel_size);
  const std::vector<int> batches = parse_int_list(o.batches, "--batch");
  std::vector<int> ks;
  if (!o.speculative_tokens.empty()) ks = parse_int_list(o.speculative_tokens, "--num-speculative-tokens");
  GS_CHECK(o.speculative_model.empty() || !ks.empty(),
           "--speculative-model needs --num-speculative-tokens (the draft lengths to time)");
  GS_CHECK(ks.empty() || (!o.overlap && o.tensor_parallel_size == 1),
           "--num-speculative-tokens: verify steps are timed one at a time on one GPU (not with --overlap or "
           "--tensor-parallel-size)");
  if (o.tensor_parallel_size > 1) return run_tensor_parallel(o, batches);
  return run_single(o, batches, ks);
}

void print_results(const BenchDecodeOptions& o, const std::string& device, const std::vector<Result>& results) {

  std::printf("\n%s, %s, context %d, %d steps after %d warm-up (HBM ceiling %.2f TB/s), %s%s\n", o.model.c_str(),
              device.c_str(), o.context, o.steps, o.warmup, o.hbm_tb_s, sampling_label(o).c_str(),
              o.overlap ? ", overlapped steps" : "");
  const bool speculative = !results.empty() && results.front().k > 0;
  if (speculative) {
    std::printf("| batch | K | verify ms (1 + K rows a sequence) | draft round ms (K steps) | draft ms/step | round ms | "
                "tokens/s if all accepted | decode floor ms | steps from graphs |\n");
    std::printf("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
  } else {
    std::printf("| batch | ms/step | tokens/s | weights GB | KV GB | floor ms | step / floor | steps from graphs |\n");
    std::printf("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
  }
  nlohmann::json j = nlohmann::json::array();
  for (const Result& r : results) {
    if (speculative) {
      const double round = r.ms_per_step + r.draft_ms;
      std::printf("| %d | %d | %.3f | %.3f | %.3f | %.3f | %.0f | %.3f | %llu / %llu |\n", r.batch, r.k, r.ms_per_step,
                  r.draft_ms, r.draft_ms / r.k, round, r.batch * (1 + r.k) * 1e3 / round, r.floor_ms,
                  (unsigned long long)r.graph_steps, (unsigned long long)(r.graph_steps + r.eager_steps));
    } else {
      std::printf("| %d | %.3f | %.0f | %.2f | %.3f | %.3f | %.2fx | %llu / %llu |\n", r.batch, r.ms_per_step,
                  r.batch * 1e3 / r.ms_per_step, r.weight_gb, r.kv_gb, r.floor_ms, r.ms_per_step / r.floor_ms,
                  (unsigned long long)r.graph_steps, (unsigned long long)(r.graph_steps + r.eager_steps));
    }
    j.push_back({{"model", o.model}, {"backend", device}, {"batch", r.batch}, {"context", o.context},
                 {"ms_per_step", r.ms_per_step}, {"tokens_per_s", r.batch * 1e3 / r.ms_per_step},
                 {"weight_gb", r.weight_gb}, {"kv_gb", r.kv_gb}, {"floor_ms", r.floor_ms},
                 {"ratio_to_floor", r.ms_per_step / r.floor_ms}, {"graph_steps", r.graph_steps},
                 {"eager_steps", r.eager_steps}, {"sampling", sampling_label(o)},
                 {"overlap", o.overlap}, {"tokens_fnv1a", r.tokens_fnv1a},
                 {"speculative_tokens", r.k}, {"draft_round_ms", r.draft_ms}});
  }
  if (!o.json_out.empty()) {
    std::ofstream f(o.json_out);
    GS_CHECK(f.good(), "cannot write {}", o.json_out);
    f << j.dump(2) << "\n";
  }
}

GS_REGISTER_COMMAND(bench_decode, "bench-decode",
                    "Time whole-model decode steps of a model shape against its memory floor",
                    [](CLI::App& app) -> std::function<int()> {
                      auto o = std::make_shared<BenchDecodeOptions>();
                      app.add_option("--model", o->model, "Preset name (e2b, e4b, 26b-a4b, 31b, demo) or model directory")
                          ->capture_default_str();
                      app.add_option("--load-format", o->load_format,
                                     "dummy: random weights generated on the device; auto: read the checkpoint")
                          ->capture_default_str();
                      app.add_option("--backend", o->backend, "cpu, cuda or cuda:N")->capture_default_str();
                      add_kernel_policy_option(app, o->kernel_policy);
                      app.add_option("--batch", o->batches, "Comma-separated batch sizes, e.g. 1,8,64")
                          ->capture_default_str();
                      app.add_option("--context", o->context, "Cached tokens per sequence before the timed steps")
                          ->capture_default_str();
                      app.add_option("--steps", o->steps, "Timed decode steps")->capture_default_str();
                      app.add_option("--warmup", o->warmup, "Untimed steps first")->capture_default_str();
                      app.add_option("--page-size", o->page_size, "KV page size in tokens")->capture_default_str();
                      app.add_flag("--enforce-eager", o->enforce_eager,
                                   "Launch every op from the host instead of replaying CUDA graphs");
                      app.add_flag("--overlap", o->overlap,
                                   "Launch each step before collecting the previous one's ids, as the engine "
                                   "does (the input id is copied on the device)");
                      app.add_option("--hbm-tb-s", o->hbm_tb_s, "Bandwidth ceiling for the floor, TB/s")
                          ->capture_default_str();
                      app.add_option("--json", o->json_out, "Also write the results as JSON to this file");
                      app.add_option("--tensor-parallel-size,--tp", o->tensor_parallel_size,
                                     "Split the model over N GPUs (cuda:0..N-1, one thread each; --backend cuda)")
                          ->capture_default_str();
                      app.add_flag("--disable-custom-all-reduce", o->disable_custom_all_reduce,
                                   "With --tensor-parallel-size > 1: every all-reduce through NCCL (vLLM's flag), "
                                   "instead of the peer-memory one-shot all-reduce for small messages");
                      app.add_option("--temperature", o->temperature,
                                     "Sampling temperature of every sequence (0: greedy)")
                          ->capture_default_str();
                      app.add_option("--top-p", o->top_p,
                                     "Nucleus sampling: keep the smallest set of tokens with this mass")
                          ->check(CLI::Range(0.f, 1.f))
                          ->capture_default_str();
                      app.add_option("--top-k", o->top_k, "Keep the k most likely tokens (0: all)")
                          ->capture_default_str();
                      app.add_option("--num-speculative-tokens", o->speculative_tokens,
                                     "Comma-separated K values: time speculative verify steps (1 + K rows a "
                                     "sequence, every draft kept) instead of decode steps, e.g. 1,2,3,4,5,6,7")
                          ->capture_default_str();
                      app.add_option("--speculative-model", o->speculative_model,
                                     "With --num-speculative-tokens: the MTP assistant (directory or preset, e.g. "
                                     "e2b-assistant) drafts the K tokens after each verify; its rounds are timed")
                          ->capture_default_str();
                      return [o] { return run(*o); };
                    });

}  // namespace
}  // namespace gs::cli
