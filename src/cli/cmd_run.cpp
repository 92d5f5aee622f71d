// gemmaserve run: one chat turn streamed to the terminal, through the same engine, chat template,
// sampling and stop logic as the server (api::OpenAIService), without HTTP.
#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "api/api_error.h"
#include "api/generation_session.h"
#include "api/openai_service.h"
#include "cli/command.h"
#include "cli/kernel_policy_option.h"
#include "cli/multimodal_flags.h"
#include "core/error.h"
#include "core/log.h"
#include "core/read_file.h"
#include "cli/serving_stack.h"
#include "cli/speculative_options.h"

namespace gs::cli {
namespace {

struct RunOptions {
  StackOptions stack;
  SpeculativeFlags speculative;
  MultimodalFlags multimodal;
  std::vector<std::string> images;  // --image PATH, in order, before the prompt's text
  std::string prompt, system;
  int max_tokens = 256;
  std::optional<double> temperature, top_p;
  std::optional<int> top_k;
  std::optional<int64_t> seed;
  bool enable_thinking = false;
  double kv_cache_gib = 0;
};

// An image file as a data: URL (the decoder sniffs the real format; the media type only has to
// say "image").
std::string file_data_url(const std::string& path) {
  static const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const std::string bytes = read_file(path);
  std::string out = "data:image/png;base64,";
  out.reserve(out.size() + (bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t v = uint32_t(uint8_t(bytes[i])) << 16;
    if (i + 1 < bytes.size()) v |= uint32_t(uint8_t(bytes[i + 1])) << 8;
    if (i + 2 < bytes.size()) v |= uint8_t(bytes[i + 2]);
    out += alphabet[(v >> 18) & 63];
    out += alphabet[(v >> 12) & 63];
    out += i + 1 < bytes.size() ? alphabet[(v >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? alphabet[v & 63] : '=';
  }
  return out;
}

int run(RunOptions o) {
  GS_CHECK(!o.prompt.empty(), "--prompt must not be empty");
  GS_CHECK(o.max_tokens > 0, "--max-tokens must be positive, got {}", o.max_tokens);
  GS_CHECK(o.kv_cache_gib >= 0, "--kv-cache-memory-gib must be >= 0, got {}", o.kv_cache_gib);
  o.stack.engine.max_num_seqs = 1;
  {
    const SpeculativeChoice spec = resolve_speculative(o.speculative);
    o.stack.speculative_model = spec.model;
    o.stack.num_speculative_tokens = spec.num_tokens;
    o.stack.speculative_accept_rate = spec.accept_rate;
    o.stack.speculative_convention = spec.convention;
    o.stack.speculative_disable_by_batch_size = spec.disable_by_batch_size;
  }
  o.stack.engine.kv_cache_memory_bytes = static_cast<size_t>(o.kv_cache_gib * (1ull << 30));
  // --image turns images on; each file goes in as a data: URL, through the server's own checks.
  if (!o.images.empty()) o.multimodal.enable = true;
  o.stack.multimodal = resolve_multimodal(o.multimodal);
  o.stack.engine.enable_multimodal = o.multimodal.enable;
  nlohmann::json user_content = o.prompt;
  if (!o.images.empty()) {
    user_content = nlohmann::json::array();
    for (const std::string& path : o.images) {
      user_content.push_back({{"type", "image_url"}, {"image_url", {{"url", file_data_url(path)}}}});
    }
    user_content.push_back({{"type", "text"}, {"text", o.prompt}});
  }
  auto stack = ServingStack::load(o.stack);
  api::OpenAIService service(stack->client(), stack->serving_model());

  nlohmann::json body = {{"messages", nlohmann::json::array()}, {"max_tokens", o.max_tokens}};
  if (!o.system.empty()) body["messages"].push_back({{"role", "system"}, {"content", o.system}});
  body["messages"].push_back({{"role", "user"}, {"content", user_content}});
  if (o.temperature) body["temperature"] = *o.temperature;
  if (o.top_p) body["top_p"] = *o.top_p;
  if (o.top_k) body["top_k"] = *o.top_k;
  if (o.seed) body["seed"] = *o.seed;
  if (o.enable_thinking) body["chat_template_kwargs"] = {{"enable_thinking", true}};

  api::PreparedRequest prepared;
  try {
    prepared = service.prepare(api::Endpoint::ChatCompletions, body.dump());
  } catch (const api::ApiError& e) {
    throw Error("{}", e.what());
  }
  api::GenerationSession session(stack->client(), *stack->serving_model(), std::move(prepared));
  session.submit();

  // Reasoning is shown dimmed on a terminal, so it is visibly not part of the answer.
  const bool tty = isatty(STDOUT_FILENO);
  bool in_reasoning = false;
  std::string finish;
  auto t0 = std::chrono::steady_clock::now();
  std::vector<api::ChoiceUpdate> updates;
  // Output ends with a newline (and the terminal's colour reset) however generation ends.
  auto end_output = [&] {
    if (in_reasoning && tty) std::fputs("\x1b[0m", stdout);
    std::fputs("\n", stdout);
    std::fflush(stdout);
  };
  bool running = true;
  while (running) {
    updates.clear();
    running = session.poll(std::chrono::milliseconds(100), updates);
    for (const auto& u : updates) {
      if (!u.delta.reasoning.empty()) {
        if (!in_reasoning && tty) std::fputs("\x1b[2m", stdout);
        in_reasoning = true;
        std::fputs(u.delta.reasoning.c_str(), stdout);
      }
      if (!u.delta.content.empty()) {
        if (in_reasoning) std::fputs(tty ? "\x1b[0m\n" : "\n", stdout);
        in_reasoning = false;
        std::fputs(u.delta.content.c_str(), stdout);
      }
      for (const auto& tc : u.delta.tool_calls) std::printf("\n[tool call] %s(%s)\n", tc.name.c_str(), tc.arguments.c_str());
      if (!u.error.empty()) {
        end_output();  // the error message goes to stderr on a line of its own
        throw Error("generation failed: {}", u.error);
      }
      if (!u.finish_reason.empty()) finish = u.finish_reason;
      std::fflush(stdout);
    }
  }
  end_output();
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  api::Usage u = session.usage();
  log::info("{} prompt + {} generated tokens in {:.2f} s ({:.1f} tokens/s), finish reason: {}", u.prompt_tokens,
            u.completion_tokens, secs, secs > 0 ? u.completion_tokens / secs : 0.0, finish);
  return 0;
}

GS_REGISTER_COMMAND(run, "run", "One chat turn with a model, streamed to the terminal",
                    [](CLI::App& app) -> std::function<int()> {
                      auto o = std::make_shared<RunOptions>();
                      app.add_option("--model", o->stack.model,
                                     "Model directory, or a preset with --load-format dummy (default: the built-in "
                                     "demo model)");
                      app.add_option("--prompt", o->prompt, "The user message")->required();
                      app.add_option("--system", o->system, "A system message before it");
                      app.add_option("--image", o->images,
                                     "An image file (PNG, JPEG, GIF, BMP, WebP) to put before the prompt's text; "
                                     "repeatable, in order. Turns on --enable-multimodal");
                      add_multimodal_options(app, o->multimodal);
                      app.add_option("--max-tokens", o->max_tokens, "Most tokens to generate")->capture_default_str();
                      app.add_option("--temperature", o->temperature,
                                     "Sampling temperature, 0 for greedy (default: generation_config.json)");
                      app.add_option("--top-p", o->top_p, "Nucleus sampling mass (default: generation_config.json)");
                      app.add_option("--top-k", o->top_k, "Top-k sampling, 0 for off (default: generation_config.json)");
                      app.add_option("--seed", o->seed, "Sampling seed (same seed, same output)");
                      app.add_flag("--enable-thinking", o->enable_thinking,
                                   "Ask the model to reason first (chat_template_kwargs.enable_thinking)");
                      app.add_option("--load-format", o->stack.load_format, "auto | dummy")->capture_default_str();
                      app.add_option("--tokenizer", o->stack.tokenizer, "Tokenizer (default: the model's)");
                      app.add_option("--backend", o->stack.backend, "cpu, cuda or cuda:N");
                      add_kernel_policy_option(app, o->stack.kernel_policy);
                      add_speculative_options(app, o->speculative);
                      app.add_option("--max-model-len", o->stack.engine.max_model_len,
                                     "Longest prompt + output (0: the model's)");
                      // The memory flags of serve, which the engine's KV budget errors name.
                      app.add_option("--gpu-memory-utilization", o->stack.engine.gpu_memory_utilization,
                                     "cuda: fraction of the GPU's memory the engine may use (weights, activations, KV)")
                          ->capture_default_str();
                      app.add_option("--kv-cache-memory-gib", o->kv_cache_gib,
                                     "KV cache size in GiB (0: cuda derives it from --gpu-memory-utilization, cpu "
                                     "uses 1 GiB)");
                      app.add_option("--max-num-batched-tokens", o->stack.engine.max_num_batched_tokens,
                                     "Token budget of one engine step (the prompt is prefilled in chunks of this size)")
                          ->capture_default_str();
                      return [o] { return run(*o); };
                    });

}  // namespace
}  // namespace gs::cli
