// gemmaserve bench: a serving load generator for any OpenAI-compatible server (ours, vLLM,
// SGLang), measuring on the client the way `vllm bench serve` does. Option names follow vLLM's.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <iostream>
#include <limits>

#include "bench/bench_tokenizer.h"
#include "bench/benchmark.h"
#include "bench/dataset.h"
#include "bench/image_dataset.h"
#include "bench/report.h"
#include "bench/svg_chart.h"
#include "bench/sweep.h"
#include "cli/command.h"
#include "core/error.h"
#include "core/log.h"

namespace gs::cli {
namespace {

using namespace gs::bench;

struct BenchOptions {
  std::string base_url;
  std::string endpoint = "/v1/completions";
  std::string model;
  std::string tokenizer;
  std::string api_key;
  std::string dataset_name = "random";
  std::string dataset_path;
  int num_prompts = 1000;
  int random_input_len = 1024;
  int random_output_len = 128;
  double random_range_ratio = 0;
  std::string random_range_mode = "vllm";
  int random_prefix_len = 0;
  int random_mm_items = 1;
  std::string random_mm_sizes = "720x1280";
  int sharegpt_output_len = 0;
  int jsonl_output_len = 256;
  int max_concurrency = 0;
  double request_rate = std::numeric_limits<double>::infinity();
  double burstiness = 1;
  int warmup_requests = 0;
  uint64_t seed = 0;
  bool ignore_eos = false;
  double temperature = 0;
  std::string extra_body;
  bool disable_tqdm = false;
  std::vector<std::string> goodput;
  std::string output_json;
  std::string output_requests;
  std::string plot_dir;
  std::string sweep;
  double timeout_s = 600;
};

// The tokenizer prompt lengths and token counts come from: --tokenizer, else the server's own
// (POST /tokenize). Null when neither is there; `why_none` then says why the server's was not used.
std::unique_ptr<BenchTokenizer> resolve_tokenizer(const BenchOptions& o, const std::string& model,
                                                  std::string& why_none) {
  if (!o.tokenizer.empty()) return local_bench_tokenizer(o.tokenizer);
  try {
    auto tok = server_bench_tokenizer(o.base_url, o.api_key, model, o.timeout_s);
    log::info("no --tokenizer: token lengths come from the server's tokenizer ({})", tok->description());
    return tok;
  } catch (const Error& e) {
    why_none = e.what();
    return nullptr;
  }
}

std::vector<BenchRequest> load_dataset(const BenchOptions& o, const BenchTokenizer* tok, const std::string& why_none) {
  if (o.dataset_name == "random" || o.dataset_name == "random-mm") {
    GS_CHECK(o.dataset_name == "random" || o.endpoint == "/v1/chat/completions",
             "--dataset-name random-mm sends images in chat messages: use --endpoint /v1/chat/completions");
    GS_CHECK(tok, "--dataset-name random needs a tokenizer (prompt lengths are exact token counts): pass --tokenizer "
             "(a tokenizer.json, model directory or .gguf); {}", why_none);
    RandomDatasetOptions r;
    r.num_prompts = o.num_prompts;
    r.input_len = o.random_input_len;
    r.output_len = o.random_output_len;
    r.range_ratio = o.random_range_ratio;
    r.range_mode = parse_range_mode(o.random_range_mode);
    r.prefix_len = o.random_prefix_len;
    r.seed = o.seed;
    const LengthBounds in = length_bounds(r.input_len, r.range_ratio, r.range_mode);
    const LengthBounds out = length_bounds(r.output_len, r.range_ratio, r.range_mode);
    log::info("random dataset, --random-range-mode {} (range ratio {}): input lengths uniform in [{}, {}]{}, "
              "output lengths uniform in [{}, {}]",
              range_mode_name(r.range_mode), r.range_ratio, in.lo, in.hi,
              r.prefix_len > 0 ? fmt::format(" plus a shared prefix of {}", r.prefix_len) : "", out.lo, out.hi);
    std::vector<BenchRequest> requests = random_dataset(*tok, r);
    if (o.dataset_name == "random-mm") {
      RandomMmOptions mm;
      mm.items_per_request = o.random_mm_items;
      mm.sizes = parse_image_sizes(o.random_mm_sizes);
      mm.seed = o.seed;
      add_random_images(requests, mm);
      log::info("random-mm: {} random image(s) of {} per request (prompt lengths from the server's usage)",
                o.random_mm_items, o.random_mm_sizes);
    }
    return requests;
  }
  if (o.dataset_name == "sharegpt") {
    GS_CHECK(tok, "--dataset-name sharegpt needs a tokenizer (lengths are token counts): pass --tokenizer; {}",
             why_none);
    GS_CHECK(!o.dataset_path.empty(), "--dataset-name sharegpt needs --dataset-path");
    return sharegpt_dataset(o.dataset_path, *tok, o.num_prompts, o.sharegpt_output_len, o.seed);
  }
  if (o.dataset_name == "jsonl") {
    GS_CHECK(!o.dataset_path.empty(), "--dataset-name jsonl needs --dataset-path");
    if (!tok) log::info("no tokenizer: prompt lengths will come from the server's usage ({})", why_none);
    return jsonl_dataset(o.dataset_path, tok, o.num_prompts, o.jsonl_output_len);
  }
  throw Error("--dataset-name '{}' is not random, random-mm, sharegpt or jsonl", o.dataset_name);
}

nlohmann::json config_json(const BenchOptions& o, const RequestSettings& s, const BenchTokenizer* tok) {
  auto num = [](double v) { return std::isinf(v) ? nlohmann::json("inf") : nlohmann::json(v); };
  nlohmann::json j = {{"base_url", o.base_url},      {"endpoint", o.endpoint},
                      {"model_id", s.model},         {"tokenizer", tok ? tok->description() : ""},
                      {"dataset_name", o.dataset_name}, {"num_prompts", o.num_prompts},
                      {"max_concurrency", o.max_concurrency > 0 ? nlohmann::json(o.max_concurrency) : nlohmann::json(nullptr)},
                      {"request_rate", num(o.request_rate)}, {"burstiness", o.burstiness},
                      {"seed", o.seed},              {"ignore_eos", o.ignore_eos},
                      {"warmup_requests", o.warmup_requests}, {"temperature", o.temperature},
                      {"extra_body", s.extra_body}};
  if (o.dataset_name == "random-mm") {
    j["random_mm_base_items_per_request"] = o.random_mm_items;
    j["random_mm_image_sizes"] = o.random_mm_sizes;
  }
  if (o.dataset_name == "random" || o.dataset_name == "random-mm") {
    j["random_input_len"] = o.random_input_len;
    j["random_output_len"] = o.random_output_len;
    j["random_range_ratio"] = o.random_range_ratio;
    j["random_range_mode"] = o.random_range_mode;
    j["random_prefix_len"] = o.random_prefix_len;
  } else {
    j["dataset_path"] = o.dataset_path;
  }
  return j;
}

// "out/reqs.jsonl" + "max-concurrency_16" -> "out/reqs.max-concurrency_16.jsonl" (sweeps keep every run).
std::string with_suffix(const std::string& path, const std::string& suffix) {
  if (suffix.empty()) return path;
  const size_t slash = path.rfind('/');
  const size_t dot = path.rfind('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return path + "." + suffix;
  return path.substr(0, dot) + "." + suffix + path.substr(dot);
}

// Failed requests, grouped by what went wrong (each request's own error is in --output-requests).
void report_failures(const std::vector<RequestResult>& results) {
  std::map<std::string, int> by_error;
  int failed = 0;
  for (const auto& r : results) {
    if (r.success) continue;
    ++failed;
    ++by_error[r.error.substr(0, 300)];
  }
  if (failed == 0) return;
  std::vector<std::pair<int, std::string>> sorted;
  for (auto& [e, n] : by_error) sorted.emplace_back(n, e);
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  log::warn("{} of {} requests failed:", failed, results.size());
  for (size_t i = 0; i < sorted.size() && i < 5; ++i) log::warn("  {} x {}", sorted[i].first, sorted[i].second);
  if (sorted.size() > 5) log::warn("  ... and {} other errors (see --output-requests)", sorted.size() - 5);
}

// Per-request JSONL and per-run plots; `run_name` is empty for a single run.
void write_run_files(const BenchOptions& o, const std::string& run_name, const BenchmarkRun& b) {
  if (!o.output_requests.empty()) write_text_file(with_suffix(o.output_requests, run_name), requests_jsonl(b.run.results));
  if (!o.plot_dir.empty()) {
    const std::string dir = run_name.empty() ? o.plot_dir : o.plot_dir + "/" + run_name;
    for (const auto& p : write_run_plots(dir, b.run.results, b.metrics)) log::info("wrote {}", p);
  }
}

int run(BenchOptions o) {
  if (o.api_key.empty()) {
    if (const char* k = std::getenv("OPENAI_API_KEY")) o.api_key = k;
  }
  RequestSettings s;
  s.endpoint = parse_api_endpoint(o.endpoint);
  s.ignore_eos = o.ignore_eos;
  s.temperature = o.temperature;
  if (!o.extra_body.empty()) {
    try {
      s.extra_body = nlohmann::json::parse(o.extra_body);
    } catch (const nlohmann::json::parse_error& e) {
      throw Error("--extra-body is not JSON: {}", e.what());
    }
    GS_CHECK(s.extra_body.is_object(), "--extra-body must be a JSON object (got {})", o.extra_body);
  }
  const GoodputSlo slo = parse_goodput(o.goodput);
  std::optional<SweepSpec> sweep;
  if (!o.sweep.empty()) sweep = parse_sweep(o.sweep);
  GS_CHECK(o.max_concurrency >= 0, "--max-concurrency {} must be >= 0 (0: no limit)", o.max_concurrency);
  GS_CHECK(o.warmup_requests >= 0, "--warmup-requests {} must be >= 0", o.warmup_requests);

  {
    HttpClient probe(o.base_url, o.api_key, 30);
    s.model = o.model.empty() ? first_model_id(probe) : o.model;
  }
  std::string why_no_tokenizer;
  const std::unique_ptr<BenchTokenizer> tok = resolve_tokenizer(o, s.model, why_no_tokenizer);
  const std::vector<BenchRequest> dataset = load_dataset(o, tok.get(), why_no_tokenizer);
  log::info("benchmarking {} at {}{} with {} prompts", s.model, o.base_url, o.endpoint, dataset.size());

  LoadOptions load;
  load.base_url = o.base_url;
  load.api_key = o.api_key;
  load.max_concurrency = o.max_concurrency;
  load.request_rate = o.request_rate;
  load.burstiness = o.burstiness;
  load.seed = o.seed;
  load.warmup_requests = o.warmup_requests;
  load.progress = !o.disable_tqdm;
  load.timeout_s = o.timeout_s;
  const nlohmann::json config = config_json(o, s, tok.get());

  if (!sweep) {
    const BenchmarkRun b = run_benchmark(load, s, dataset, tok.get(), slo);
    std::cout << metrics_table(b.metrics, {o.max_concurrency, o.request_rate, b.spec_accept_length}) << std::flush;
    write_run_files(o, "", b);
    if (!o.output_json.empty()) {
      nlohmann::json j = config;
      j.update(metrics_json(b.metrics));
      if (b.spec_accept_length) j["spec_decode_acceptance_length"] = *b.spec_accept_length;
      write_text_file(o.output_json, j.dump(2) + "\n");
    }
    report_failures(b.run.results);
    return b.metrics.completed > 0 ? 0 : 1;
  }

  std::vector<SweepPoint> points;
  nlohmann::json runs_extra = nlohmann::json::array();
  int failed = 0;
  for (double v : sweep->values) {
    LoadOptions l = load;
    if (sweep->param == SweepParam::MaxConcurrency) l.max_concurrency = static_cast<int>(v);
    else l.request_rate = v;
    log::info("sweep: {}={}", sweep_param_name(sweep->param), v);
    const BenchmarkRun b = run_benchmark(l, s, dataset, tok.get(), slo);
    std::cout << metrics_table(b.metrics, {l.max_concurrency, l.request_rate, b.spec_accept_length}) << std::flush;
    write_run_files(o, fmt::format("{}_{:g}", sweep_param_name(sweep->param), v), b);
    report_failures(b.run.results);
    points.push_back({v, b.metrics});
    runs_extra.push_back(b.spec_accept_length ? nlohmann::json(*b.spec_accept_length) : nlohmann::json(nullptr));
    failed += b.metrics.failed;
  }
  std::cout << "\n" << sweep_table(*sweep, points) << std::flush;
  nlohmann::json j = sweep_json(*sweep, points);
  for (size_t i = 0; i < points.size(); ++i) {
    if (!runs_extra[i].is_null()) j["runs"][i]["spec_decode_acceptance_length"] = runs_extra[i];
  }
  j["config"] = config;
  if (!o.output_json.empty()) write_text_file(o.output_json, j.dump(2) + "\n");
  std::string plot = !o.plot_dir.empty() ? o.plot_dir + "/sweep.svg" : "";
  if (plot.empty() && !o.output_json.empty()) {
    plot = o.output_json.substr(0, o.output_json.rfind(".json")) + ".svg";
  }
  if (!plot.empty()) {
    write_text_file(plot, sweep_svg(*sweep, points));
    log::info("wrote {}", plot);
  }
  if (failed > 0) log::warn("{} requests failed over the sweep", failed);
  return 0;
}

GS_REGISTER_COMMAND(bench, "bench", "Benchmark an OpenAI-compatible server (vllm bench serve's metrics)",
                    [](CLI::App& app) -> std::function<int()> {
                      auto o = std::make_shared<BenchOptions>();
                      app.add_option("--base-url", o->base_url, "Server, e.g. http://127.0.0.1:8000")->required();
                      app.add_option("--endpoint", o->endpoint, "/v1/completions or /v1/chat/completions")
                          ->capture_default_str();
                      app.add_option("--model", o->model, "Model name to send (default: the first of GET /v1/models)");
                      app.add_option("--tokenizer", o->tokenizer,
                                     "tokenizer.json, model directory or .gguf: exact prompt lengths, and output "
                                     "counts when the server sends no usage (default: the server's own, over its "
                                     "POST /tokenize and /detokenize)");
                      app.add_option("--api-key", o->api_key, "Bearer token (default: $OPENAI_API_KEY)");
                      app.add_option("--dataset-name", o->dataset_name,
                                     "random, random-mm (random text plus random images, chat endpoint), sharegpt or "
                                     "jsonl")->capture_default_str();
                      app.add_option("--random-mm-base-items-per-request", o->random_mm_items,
                                     "random-mm: images per request")->capture_default_str();
                      app.add_option("--random-mm-image-sizes", o->random_mm_sizes,
                                     "random-mm: image sizes as HEIGHTxWIDTH, comma-separated, one drawn uniformly per "
                                     "image (random pixels, sent as BMP data: URLs)")->capture_default_str();
                      app.add_option("--dataset-path", o->dataset_path, "ShareGPT JSON or prompts JSONL");
                      app.add_option("--num-prompts", o->num_prompts, "Requests to send")->capture_default_str();
                      app.add_option("--random-input-len", o->random_input_len)->capture_default_str();
                      app.add_option("--random-output-len", o->random_output_len)->capture_default_str();
                      app.add_option("--random-range-ratio", o->random_range_ratio,
                                     "Spread of random lengths (meaning set by --random-range-mode)")
                          ->capture_default_str();
                      app.add_option("--random-range-mode", o->random_range_mode,
                                     "vllm: lengths in [L(1-r), L(1+r)]; sglang: in [L*r, L]")
                          ->capture_default_str();
                      app.add_option("--random-prefix-len", o->random_prefix_len, "Tokens of a prefix shared by all prompts")
                          ->capture_default_str();
                      app.add_option("--sharegpt-output-len", o->sharegpt_output_len,
                                     "Fixed output length for sharegpt (0: the answer's length)")
                          ->capture_default_str();
                      app.add_option("--jsonl-output-len", o->jsonl_output_len,
                                     "Output length of jsonl prompts without \"output_len\"")
                          ->capture_default_str();
                      app.add_option("--max-concurrency", o->max_concurrency, "Requests in flight at most (0: no limit)")
                          ->capture_default_str();
                      app.add_option("--request-rate", o->request_rate, "Requests per second (inf: all at once)")
                          ->capture_default_str();
                      app.add_option("--burstiness", o->burstiness, "Gamma shape of the arrival gaps (1: Poisson)")
                          ->capture_default_str();
                      app.add_option("--warmup-requests", o->warmup_requests, "Requests sent first and not measured")
                          ->capture_default_str();
                      app.add_option("--seed", o->seed, "Seed of datasets and arrivals")->capture_default_str();
                      app.add_flag("--ignore-eos", o->ignore_eos, "Send ignore_eos: every request runs to max_tokens");
                      app.add_option("--temperature", o->temperature)->capture_default_str();
                      app.add_option("--extra-body", o->extra_body, "JSON object merged into every request body");
                      app.add_flag("--disable-tqdm", o->disable_tqdm, "No progress bar on stderr");
                      app.add_option("--goodput", o->goodput, "Objectives in ms: ttft:MS tpot:MS e2el:MS");
                      app.add_option("--output-json", o->output_json, "Every metric (and the config) as JSON");
                      app.add_option("--output-requests", o->output_requests, "Per-request JSONL");
                      app.add_option("--plot", o->plot_dir, "Directory for SVG plots");
                      app.add_option("--sweep", o->sweep, "max-concurrency=1,16,64,100 or request-rate=1,4,inf");
                      app.add_option("--timeout", o->timeout_s, "Seconds to wait for a connection or a chunk")
                          ->capture_default_str();
                      return [o] { return run(*o); };
                    });

}  // namespace
}  // namespace gs::cli
