// gemmaserve draft: one drafting round of an MTP assistant, for debugging and parity checks. The
// target runs every token of a context but the last; the assistant proposes K tokens to follow the
// whole context (runner/context_draft.h); the K ids are printed as a JSON array on the last line of
// stdout, and each step's logits can be written to a .npy file.
#include <chrono>
#include <cstdio>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/kernel_policy_option.h"
#include "cli/speculative_options.h"
#include "core/error.h"
#include "core/log.h"
#include "core/npy.h"
#include "kernels/backends.h"
#include "model/gemma4_drafter.h"
#include "model/model_source.h"
#include "runner/context_draft.h"

namespace gs::cli {
namespace {

struct DraftOptions {
  std::string model, assistant, tokens, out_logits;
  std::string backend = "cpu";
  std::string kernel_policy;
  std::string load_format = "auto";
  std::string convention = "transformers";
  int num_tokens = 3;
  int page_size = 16;
};

int run(const DraftOptions& o) {
  const std::vector<int> ctx = npy_token_ids(read_npy(o.tokens), o.tokens);
  std::unique_ptr<Backend> backend = create_backend(o.backend, backend_options(o.kernel_policy));
  const LoadFormat format = parse_load_format(o.load_format);
  LoadedModel target = load_model(ModelSpec{o.model, format}, *backend);
  GS_CHECK(!target.config.is_assistant, "--model {} is an MTP assistant; it goes in --speculative-model", o.model);
  LoadedModel assistant = load_model(ModelSpec{o.assistant, format, /*dummy_seed=*/1}, *backend);
  GS_CHECK(assistant.config.is_assistant, "--speculative-model {} is not an MTP assistant ({})", o.assistant,
           assistant.config.architecture);
  assistant.config.bind_assistant_to(target.config);
  Gemma4Model model(target.config, std::move(target.weights), *backend);
  Gemma4Drafter drafter(assistant.config, std::move(assistant.weights), model, *backend,
                        parse_draft_convention(o.convention));
  log::info("draft: {} ({} layers) drafts for {} on {}", o.assistant, drafter.config().num_layers, o.model,
            backend->name());

  const auto t0 = std::chrono::steady_clock::now();
  const ContextDraft d = draft_after_context(model, drafter, ctx, o.num_tokens, o.page_size);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  log::info("draft: {} tokens after a context of {} in {:.3f} s", d.tokens.size(), ctx.size(), secs);
  if (!o.out_logits.empty()) {
    write_npy(o.out_logits, DType::F32, {int64_t(d.tokens.size()), int64_t(model.config().vocab_size)},
              d.logits.data());
    log::info("draft: logits [{}, {}] -> {}", d.tokens.size(), model.config().vocab_size, o.out_logits);
  }
  std::fputs((nlohmann::json(d.tokens).dump() + "\n").c_str(), stdout);
  return 0;
}

GS_REGISTER_COMMAND(draft, "draft", "Draft tokens after a context with an MTP assistant (a debugging tool)",
                    [](CLI::App& app) -> std::function<int()> {
                      auto o = std::make_shared<DraftOptions>();
                      app.add_option("--model", o->model, "The target: a model directory, or a preset with "
                                                           "--load-format dummy")
                          ->required();
                      app.add_option("--speculative-model", o->assistant,
                                     "The MTP assistant (Gemma4AssistantForCausalLM) that drafts for it: a directory "
                                     "or, with --load-format dummy, a preset such as e2b-assistant")
                          ->required();
                      app.add_option("--tokens", o->tokens,
                                     "The context: int32 token ids [T], T >= 2 (.npy); the target runs all but the "
                                     "last, which seeds the first draft step")
                          ->required();
                      app.add_option("--num-speculative-tokens", o->num_tokens, "K, the tokens to draft")
                          ->capture_default_str()
                          ->check(CLI::Range(1, 64));
                      app.add_option("--out-logits", o->out_logits, "also write each step's logits, f32 [K, vocab] (.npy)");
                      app.add_option("--backend", o->backend, "cpu, cuda or cuda:N")->capture_default_str();
                      add_kernel_policy_option(app, o->kernel_policy);
                      add_convention_option(app, o->convention);
                      app.add_option("--page-size", o->page_size, "KV cache page size in tokens")->capture_default_str();
                      app.add_option("--load-format", o->load_format, "auto (read the checkpoints) | dummy (random "
                                                                       "weights of both)")
                          ->capture_default_str();
                      return [o] { return run(*o); };
                    });

}  // namespace
}  // namespace gs::cli
