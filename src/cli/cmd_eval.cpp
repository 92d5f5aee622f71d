// gemmaserve eval: multiple-choice accuracy of a model behind any OpenAI-compatible server, by
// generation with a pinned prompt or by log-likelihood of each choice (bench/eval/).
#include <fmt/format.h>

#include <cstdlib>
#include <iostream>

#include "bench/eval/eval_runner.h"
#include "bench/eval/mc_prompt.h"
#include "bench/http_client.h"
#include "bench/svg_chart.h"
#include "cli/command.h"
#include "core/error.h"
#include "core/log.h"

namespace gs::cli {
namespace {

using namespace gs::bench;

struct EvalCliOptions {
  EvalOptions eval;
  std::string mode = "generate";
  std::string dataset;
  int limit = 0;
  std::string output;
  std::string output_json;
  bool disable_tqdm = false;
};

int run(EvalCliOptions o) {
  EvalOptions& e = o.eval;
  e.mode = parse_eval_mode(o.mode);
  e.progress = !o.disable_tqdm;
  if (e.api_key.empty()) {
    if (const char* k = std::getenv("OPENAI_API_KEY")) e.api_key = k;
  }
  GS_CHECK(e.max_tokens >= 1, "--max-tokens {} must be at least 1", e.max_tokens);
  const std::vector<McItem> items = load_mc_dataset(o.dataset, o.limit);
  if (e.model.empty()) {
    HttpClient probe(e.base_url, e.api_key, 30);
    e.model = first_model_id(probe);
  }
  log::info("eval: {} items of {} on {} ({} mode, concurrency {})", items.size(), o.dataset, e.model, o.mode,
            e.concurrency);
  const std::vector<ItemResult> results = run_eval(e, items);

  std::vector<bool> correct, correct_norm;
  int errors = 0, unanswered = 0;
  std::string first_error;
  std::string lines;
  for (const auto& r : results) {
    correct.push_back(r.correct());
    if (e.mode == EvalMode::Loglikelihood) correct_norm.push_back(r.predicted_norm && *r.predicted_norm == r.item.answer);
    if (!r.ok && errors++ == 0) first_error = r.error;
    if (r.ok && !r.predicted) ++unanswered;
    lines += item_result_json(r, e.mode).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  }
  if (!o.output.empty()) write_text_file(o.output, lines);

  const Accuracy acc = accuracy(correct);
  nlohmann::json summary = {{"dataset", o.dataset}, {"model", e.model},       {"mode", o.mode},
                            {"n", acc.n},           {"correct", acc.correct}, {"accuracy", acc.acc},
                            {"stderr", acc.stderr_}, {"errors", errors},      {"unanswered", unanswered},
                            {"seed", e.seed},       {"temperature", e.temperature}};
  std::cout << fmt::format("accuracy: {:.4f} ± {:.4f} ({} of {} correct", acc.acc, acc.stderr_, acc.correct, acc.n);
  if (e.mode == EvalMode::Generate) std::cout << fmt::format(", {} unanswered", unanswered);
  std::cout << fmt::format(", {} errors)\n", errors);
  if (e.mode == EvalMode::Loglikelihood) {
    const Accuracy norm = accuracy(correct_norm);
    summary["accuracy_norm"] = norm.acc;
    summary["stderr_norm"] = norm.stderr_;
    std::cout << fmt::format("accuracy (length-normalised): {:.4f} ± {:.4f}\n", norm.acc, norm.stderr_);
  }
  std::cout << std::flush;
  if (!o.output_json.empty()) write_text_file(o.output_json, summary.dump(2) + "\n");
  if (errors > 0) {
    log::error("{} of {} items failed; the first: {}", errors, acc.n, first_error);
    return 1;
  }
  return 0;
}

GS_REGISTER_COMMAND(eval, "eval", "Multiple-choice accuracy of a model behind an OpenAI-compatible server",
                    [](CLI::App& app) -> std::function<int()> {
                      auto o = std::make_shared<EvalCliOptions>();
                      app.add_option("--base-url", o->eval.base_url, "Server, e.g. http://127.0.0.1:8000")->required();
                      app.add_option("--dataset", o->dataset,
                                     "JSONL: {\"question\", \"choices\": [...], \"answer\": index or letter}")
                          ->required();
                      app.add_option("--mode", o->mode,
                                     "generate: chat completion + \"Answer: X\" extraction; loglikelihood: "
                                     "/v1/completions echo logprobs of each choice")
                          ->capture_default_str();
                      app.add_option("--model", o->eval.model, "Model name (default: the first of GET /v1/models)");
                      app.add_option("--api-key", o->eval.api_key, "Bearer token (default: $OPENAI_API_KEY)");
                      app.add_option("--concurrency", o->eval.concurrency, "Requests in flight")->capture_default_str();
                      app.add_option("--seed", o->eval.seed, "Sampling seed (item i sends seed+i)")->capture_default_str();
                      app.add_option("--temperature", o->eval.temperature, "generate mode")->capture_default_str();
                      app.add_option("--max-tokens", o->eval.max_tokens, "generate mode: reply length limit")
                          ->capture_default_str();
                      app.add_option("--limit", o->limit, "Only the first N items (0: all)")->capture_default_str();
                      app.add_option("--output", o->output, "Per-item results JSONL");
                      app.add_option("--output-json", o->output_json, "Summary (accuracy, stderr, counts) as JSON");
                      app.add_option("--timeout", o->eval.timeout_s, "Seconds to wait for a connection or a reply")
                          ->capture_default_str();
                      app.add_flag("--disable-tqdm", o->disable_tqdm, "No progress bar on stderr");
                      return [o] { return run(*o); };
                    });

}  // namespace
}  // namespace gs::cli
