#include "cli/speculative_options.h"

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace gs::cli {

void add_speculative_options(CLI::App& app, SpeculativeFlags& f) {
  app.add_option("--speculative-model", f.model,
                 "Speculative decoding: the Gemma-4 MTP assistant (Gemma4AssistantForCausalLM) that drafts for "
                 "--model, a directory, or with --load-format dummy a preset such as e2b-assistant. Outputs are "
                 "distributed exactly as without it (greedy: identical on the cpu backend; on cuda, verify rows "
                 "round differently from one-row decode steps, so greedy output may part at near-ties)");
  app.add_option("--num-speculative-tokens", f.num_tokens, "Draft tokens per round (default 3)")
      ->check(CLI::Range(1, 16));
  app.add_option("--speculative-config", f.config,
                 "vLLM's form of the two above: '{\"method\": \"gemma4_mtp\", \"model\": DIR, "
                 "\"num_speculative_tokens\": K}'");
  app.add_option("--speculative-accept-rate", f.accept_rate,
                 "Benchmarks only, with --load-format dummy: every draft token also passes with this "
                 "probability, so random weights can be timed at a chosen acceptance length (K drafts at "
                 "rate a give 1 + a + ... + a^K tokens a round). Outputs are meaningless")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--speculative-disable-by-batch-size", f.disable_by_batch_size,
                 "Draft only while at most N requests are running (vLLM's speculative_disable_by_batch_size): "
                 "large batches are compute-bound, where K+1 verify rows a request can cost more than the "
                 "accepted tokens save (0: at every batch size)")
      ->check(CLI::Range(0, 1 << 20));
  add_convention_option(app, f.convention);
}

void add_convention_option(CLI::App& app, std::string& convention) {
  app.add_option("--speculative-convention", convention,
                 "Where the drafter queries: transformers (the newest token's position; sliding layers see "
                 "the last W+1 keys; the reference the drafter is tested against) or vllm (the position "
                 "before it with the ordinary window, as vLLM and SGLang draft)")
      ->capture_default_str()
      ->check(CLI::IsMember({"transformers", "vllm"}));
}

SpeculativeChoice resolve_speculative(const SpeculativeFlags& f) {
  SpeculativeChoice c;
  c.model = f.model;
  if (f.num_tokens > 0) c.num_tokens = f.num_tokens;
  if (!f.config.empty()) {
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(f.config);
    } catch (const std::exception& e) {
      throw Error("--speculative-config: not JSON: {}", e.what());
    }
    if (!j.is_object()) throw Error("--speculative-config: expected a JSON object, got {}", j.dump());
    for (auto it = j.begin(); it != j.end(); ++it) {
      const std::string& key = it.key();
      if (key == "method") {
        const std::string m = it->is_string() ? it->get<std::string>() : "";
        if (m != "gemma4_mtp" && m != "mtp")
          throw Error("--speculative-config: method {} is not supported (gemma4_mtp: a Gemma-4 MTP assistant)",
                      it->dump());
      } else if (key == "model") {
        if (!it->is_string() || it->get<std::string>().empty())
          throw Error("--speculative-config: model must be a non-empty string, got {}", it->dump());
        const std::string m = it->get<std::string>();
        if (!f.model.empty() && f.model != m)
          throw Error("--speculative-config names model {} but --speculative-model {}", m, f.model);
        c.model = m;
      } else if (key == "num_speculative_tokens") {
        if (!it->is_number_integer() || it->get<int64_t>() < 1 || it->get<int64_t>() > 16)
          throw Error("--speculative-config: num_speculative_tokens must be an integer in [1, 16], got {}", it->dump());
        const int k = it->get<int>();
        if (f.num_tokens > 0 && f.num_tokens != k)
          throw Error("--speculative-config says num_speculative_tokens {} but --num-speculative-tokens {}", k,
                      f.num_tokens);
        c.num_tokens = k;
      } else if (key == "disable_by_batch_size") {
        if (!it->is_number_integer() || it->get<int64_t>() < 0)
          throw Error("--speculative-config: disable_by_batch_size must be an integer >= 0, got {}", it->dump());
        const int n = it->get<int>();
        if (f.disable_by_batch_size >= 0 && f.disable_by_batch_size != n)
          throw Error("--speculative-config says disable_by_batch_size {} but --speculative-disable-by-batch-size {}",
                      n, f.disable_by_batch_size);
        c.disable_by_batch_size = n;
      } else {
        throw Error("--speculative-config: unknown key '{}' (method, model, num_speculative_tokens, "
                    "disable_by_batch_size)", key);
      }
    }
    if (c.model.empty()) throw Error("--speculative-config: no model (the MTP assistant)");
  }
  if (f.disable_by_batch_size >= 0) c.disable_by_batch_size = f.disable_by_batch_size;
  c.accept_rate = f.accept_rate;
  c.convention = f.convention;
  if (c.model.empty() && f.accept_rate > 0)
    throw Error("--speculative-accept-rate needs --speculative-model (the assistant that drafts)");
  if (c.model.empty() && f.num_tokens > 0)
    throw Error("--num-speculative-tokens needs --speculative-model (the assistant that drafts)");
  return c;
}

}  // namespace gs::cli
