// gemmaserve serve: the OpenAI-compatible server. Option names follow vLLM so that scripts and
// habits carry over.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <thread>

#include "cli/command.h"
#include "cli/kernel_policy_option.h"
#include "cli/multimodal_flags.h"
#include "cli/serving_stack.h"
#include "cli/speculative_options.h"
#include "core/error.h"
#include "core/log.h"
#include "server/api_key.h"
#include "server/graceful_shutdown.h"
#include "server/http_server.h"
#include "server/listen_socket.h"
#include "server/stats_logger.h"

namespace gs::cli {
namespace {

struct ServeOptions {
  StackOptions stack;
  SpeculativeFlags speculative;
  MultimodalFlags multimodal;
  server::ServerOptions http;
  server::ApiKeySources api_key;  // --api-key, --api-key-file, $GEMMASERVE_API_KEY as given
  std::string api_key_arg, api_key_file_arg;
  bool no_prefix_caching = false;
  double kv_cache_gib = 0;
  bool disable_log_stats = false;
  double log_stats_interval = 10;
  // Under Kubernetes' default terminationGracePeriodSeconds (30): the abort and exit that follow a
  // drain that timed out still happen before the kubelet's SIGKILL.
  double shutdown_timeout = 25;
};

int g_stop_pipe[2] = {-1, -1};
std::atomic<int> g_stop_signals{0};

extern "C" void on_stop_signal(int sig) {
  // A second Ctrl-C (or SIGTERM) while draining means "now".
  if (g_stop_signals.fetch_add(1) > 0) {
    static const char msg[] = "second signal: exiting now, without finishing the requests in flight\n";
    (void)!write(STDERR_FILENO, msg, sizeof msg - 1);
    _exit(128 + sig);
  }
  char c = static_cast<char>(sig);
  (void)!write(g_stop_pipe[1], &c, 1);
}

int serve(ServeOptions o) {
  {
    const SpeculativeChoice spec = resolve_speculative(o.speculative);
    o.stack.speculative_model = spec.model;
    o.stack.num_speculative_tokens = spec.num_tokens;
    o.stack.speculative_accept_rate = spec.accept_rate;
    o.stack.speculative_convention = spec.convention;
    o.stack.speculative_disable_by_batch_size = spec.disable_by_batch_size;
  }
  o.stack.engine.enable_prefix_caching = !o.no_prefix_caching;
  o.stack.multimodal = resolve_multimodal(o.multimodal);
  o.stack.engine.enable_multimodal = o.multimodal.enable;
  o.stack.engine.kv_cache_memory_bytes = static_cast<size_t>(o.kv_cache_gib * (1ull << 30));
  GS_CHECK(o.http.port >= 0 && o.http.port <= 65535, "--port {} is not a TCP port", o.http.port);
  GS_CHECK(o.shutdown_timeout >= 0, "--shutdown-timeout {} is negative", o.shutdown_timeout);
  if (const char* env = std::getenv(server::kApiKeyEnv)) o.api_key.env = env;
  o.http.api_key = server::resolve_api_key(o.api_key);
  if (o.http.api_key.empty() && !server::is_loopback_host(o.http.host)) {
    log::warn("listening on {} without an API key: anyone who can reach this address can use the model; set one "
              "with --api-key-file or ${} (or listen on 127.0.0.1 only)", o.http.host, server::kApiKeyEnv);
  }
  // Bound before the model loads (minutes, for a large one): a taken port fails now, not then.
  server::ListenSocket listen_socket = server::ListenSocket::open(o.http.host, o.http.port, o.http.listen_backlog);

  // SIGINT/SIGTERM only write to a pipe (any thread may take them: OpenBLAS starts threads before
  // main); the waiter thread below reads it and runs the shutdown outside signal context.
  GS_CHECK(pipe(g_stop_pipe) == 0, "cannot create the shutdown pipe");
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);

  auto stack = ServingStack::load(o.stack);
  // Declared after the stack: stops reading the engine's stats before the engine goes away.
  server::StatsLogger stats_log([&stack] { return stack->client().stats(); },
                                std::chrono::duration<double>(o.disable_log_stats ? 0 : o.log_stats_interval));
  server::ServerMetrics metrics;
  api::OpenAIService service(stack->client(), stack->serving_model(), &metrics);
  server::HttpServer http(service, metrics, o.http);
  int port = http.bind(std::move(listen_socket));

  std::thread waiter([&] {
    char sig = 0;
    while (read(g_stop_pipe[0], &sig, 1) < 0 && errno == EINTR) {
    }
    const bool signalled = sig == SIGINT || sig == SIGTERM;
    if (signalled) {
      log::info("{}: shutting down gracefully (a second signal exits at once)", sig == SIGINT ? "SIGINT" : "SIGTERM");
    }
    // The HTTP server stopping by itself can answer nobody: then there is nothing to wait for.
    std::chrono::duration<double> timeout(signalled ? o.shutdown_timeout : 0);
    server::drain(http, timeout, [&] { stack->stop(); });  // the engine's requests end with 503
    stack->stop();
    http.stop();  // close the listener, join connection threads
  });

  log::info("serving model '{}' (max model length {}) on http://{}:{}{}", stack->serving_model()->name,
            stack->engine().max_model_len(), o.http.host, port, o.http.api_key.empty() ? "" : " (API key required)");
  log::info("try: curl http://{}:{}/v1/chat/completions -H 'Content-Type: application/json' -d "
            "'{{\"model\":\"{}\",\"messages\":[{{\"role\":\"user\",\"content\":\"Hello!\"}}],\"max_tokens\":16}}'",
            o.http.host, port, stack->serving_model()->name);
  http.run();
  if (!http.shutting_down()) {
    log::error("the HTTP server stopped unexpectedly");
    char wake = 0;
    (void)!write(g_stop_pipe[1], &wake, 1);  // let the waiter finish
  }
  waiter.join();
  log::info("stopped");
  return 0;
}

GS_REGISTER_COMMAND(serve, "serve", "Serve a model over an OpenAI-compatible HTTP API",
                    [](CLI::App& app) -> std::function<int()> {
                      auto o = std::make_shared<ServeOptions>();
                      auto& e = o->stack.engine;
                      app.add_option("--model", o->stack.model,
                                     "Model directory (Hugging Face layout) or, with --load-format dummy, a preset "
                                     "(demo, e2b, e4b, 26b-a4b, 31b). Default: the built-in demo model, created on "
                                     "first use");
                      app.add_option("--load-format", o->stack.load_format,
                                     "auto: read the checkpoint's weights; dummy: random weights of its shape (for "
                                     "benchmarks without a download)")
                          ->capture_default_str();
                      app.add_option("--tokenizer", o->stack.tokenizer,
                                     "Tokenizer directory, tokenizer.json or .gguf vocabulary (default: the model's; "
                                     "the demo tokenizer when the model has none, e.g. a preset with dummy weights)");
                      app.add_option("--chat-template", o->stack.chat_template,
                                     "Jinja chat template file (default: the one beside the tokenizer; without one "
                                     "/v1/chat/completions is disabled)");
                      app.add_option("--backend", o->stack.backend, "cpu, cuda or cuda:N (default: cuda when a GPU is "
                                     "visible, else cpu)");
                      add_kernel_policy_option(app, o->stack.kernel_policy);
                      app.add_option("--tensor-parallel-size,--tp", o->stack.tensor_parallel_size,
                                     "Split the model over N GPUs of this host (cuda:0..N-1; --backend cpu: N cpu "
                                     "ranks), one thread each, over NCCL and a peer-memory all-reduce; one endpoint. "
                                     "N must divide the attention heads and the MLP widths (docs/scale-out.md)")
                          ->capture_default_str();
                      app.add_option("--data-parallel-size,--dp", o->stack.data_parallel_size,
                                     "Serve N engine replicas behind this endpoint (cuda:0..N-1, or N cpu engines; with "
                                     "--tensor-parallel-size T, replica r on cuda:rT..rT+T-1), each with the whole "
                                     "model; requests go to the replica that served their "
                                     "prompt's prefix, unless it is busier than the least-loaded one")
                          ->capture_default_str();
                      app.add_flag("--disable-custom-all-reduce", o->stack.disable_custom_all_reduce,
                                   "With --tensor-parallel-size > 1: every all-reduce through NCCL (vLLM's flag), "
                                   "instead of the peer-memory one-shot all-reduce for small messages");
                      add_speculative_options(app, o->speculative);
                      app.add_option("--host", o->http.host, "Address to listen on (127.0.0.1: this machine only)")
                          ->capture_default_str();
                      app.add_option("--port", o->http.port, "TCP port (0: any free port)")->capture_default_str();
                      auto* key_flag = app.add_option("--api-key", o->api_key_arg,
                                                      "Require 'Authorization: Bearer KEY' on every route but /health "
                                                      "and /metrics. Visible to other users in ps: prefer "
                                                      "--api-key-file or the environment variable GEMMASERVE_API_KEY "
                                                      "(one of the three)");
                      auto* key_file = app.add_option("--api-key-file", o->api_key_file_arg,
                                                      "Read the API key from the first line of this file (trailing "
                                                      "whitespace removed); an unreadable or empty file is an error");
                      app.add_option("--served-model-name", o->stack.served_model_name,
                                     "Model name clients use and responses carry (default: demo, the preset or the "
                                     "directory name)");
                      app.add_option("--max-model-len", e.max_model_len,
                                     "Longest prompt + output in tokens (0: the model's max_position_embeddings); "
                                     "longer prompts are refused, never truncated")
                          ->capture_default_str();
                      app.add_option("--max-num-seqs", e.max_num_seqs, "Requests running at once")->capture_default_str();
                      app.add_option("--max-num-batched-tokens", e.max_num_batched_tokens,
                                     "Token budget of one engine step (decode tokens + prefill chunks)")
                          ->capture_default_str();
                      app.add_option("--gpu-memory-utilization", e.gpu_memory_utilization,
                                     "cuda: fraction of the GPU's memory the engine may use (weights, activations, KV)")
                          ->capture_default_str();
                      app.add_option("--kv-cache-memory-gib", o->kv_cache_gib,
                                     "KV cache size in GiB for both pools (0: cuda derives it from "
                                     "--gpu-memory-utilization, cpu uses 1 GiB)");
                      app.add_option("--swa-full-tokens-ratio", e.swa_full_tokens_ratio,
                                     "Sliding-window pool tokens per full-attention pool token (0: derived from the "
                                     "model and window)")
                          ->capture_default_str();
                      app.add_option("--page-size", e.page_size, "Tokens per KV cache page")->capture_default_str();
                      add_multimodal_options(app, o->multimodal);
                      app.add_flag("--no-enable-prefix-caching", o->no_prefix_caching,
                                   "Turn off reuse of KV pages of prompts seen before");
                      app.add_option("--max-queue", e.max_queue,
                                     "Requests allowed to wait for a slot; more get HTTP 429")
                          ->capture_default_str();
                      app.add_flag("--debug-page-checks", e.debug_page_checks,
                                   "Bounds-check every KV page index before each step (clear error instead of a "
                                   "bad memory access)");
                      app.add_flag("--enforce-eager", e.enforce_eager,
                                   "Launch every op of a decode step from the host instead of replaying a CUDA "
                                   "graph (cuda backend)");
                      app.add_flag("--disable-overlap-schedule", e.disable_overlap_schedule,
                                   "Schedule each step only after the previous step's tokens are back (by default "
                                   "the next step is scheduled and launched while the current one runs)");
                      app.add_option("--cuda-graph-max-bs", e.cuda_graph_max_bs,
                                     "Largest decode batch replayed from a CUDA graph (0: --max-num-seqs)")
                          ->capture_default_str();
                      app.add_flag("--disable-log-stats", o->disable_log_stats,
                                   "No periodic engine stats line (throughputs, running/waiting requests, KV use, "
                                   "prefix hits, step times)");
                      app.add_option("--log-stats-interval", o->log_stats_interval,
                                     "Seconds between engine stats lines (logged only when something ran)")
                          ->capture_default_str()
                          ->check(CLI::PositiveNumber);
                      app.add_option("--seed", e.seed, "Base seed for requests without one (0: random)")
                          ->capture_default_str();
                      app.add_option("--max-body-bytes", o->http.max_body_bytes, "Largest request body; larger get 413")
                          ->capture_default_str();
                      app.add_option("--shutdown-timeout", o->shutdown_timeout,
                                     "Seconds that running and queued requests get to finish after SIGTERM or "
                                     "SIGINT. Meanwhile new requests get 503, /health answers 503 (draining) and "
                                     "/metrics shows gemmaserve_server_draining 1; requests still running at the "
                                     "end are aborted, their clients getting a 503 error (a stream: an error event "
                                     "before [DONE]). 0: abort at once. The default fits Kubernetes' default "
                                     "terminationGracePeriodSeconds of 30. The exit code is 0 after a drain, also "
                                     "one that timed out; a second signal exits at once with 128 + its number")
                          ->capture_default_str();
                      app.add_option("--http-threads", o->http.http_threads,
                                     "Connections served at once: each open stream or kept-alive connection holds a "
                                     "thread, started when needed; more connections wait in order (/health, "
                                     "/metrics and /v1/models are still answered)")
                          ->capture_default_str();
                      return [o, key_flag, key_file] {
                        if (key_flag->count() > 0) o->api_key.flag = o->api_key_arg;
                        if (key_file->count() > 0) o->api_key.file = o->api_key_file_arg;
                        return serve(*o);
                      };
                    });

}  // namespace
}  // namespace gs::cli
