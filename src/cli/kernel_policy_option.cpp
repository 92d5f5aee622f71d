#include "cli/kernel_policy_option.h"

#include <memory>

#include "core/error.h"
#include "kernels/kernel_policy_items.h"

namespace gs::cli {

namespace {

constexpr const char* kFlag = "--kernel-policy";

// Refuses bad items while the command line is parsed, before a command reads any file or loads
// a model; CLI11 prefixes the flag's name to the message.
std::string check_items(const std::string& items) {
  try {
    cuda::KernelPolicy scratch;
    cuda::apply_policy_items(scratch, items, kFlag);
  } catch (const Error& e) {
    const std::string message = e.what();
    const std::string prefix = std::string(kFlag) + ": ";
    return message.rfind(prefix, 0) == 0 ? message.substr(prefix.size()) : message;
  }
  return "";
}

}  // namespace

void add_kernel_policy_option(CLI::App& app, std::string& items) {
  // The two flags meet in `items` whatever order they come in: the policy's items follow
  // batch_invariant=true, so an explicit batch_invariant item still decides.
  struct Given {
    std::string items;
    bool deterministic = false;
  };
  auto given = std::make_shared<Given>();
  auto compose = [given, &items] { items = (given->deterministic ? "batch_invariant=true," : "") + given->items; };
  app.add_option_function<std::string>(
         kFlag,
         [given, compose](const std::string& v) {
           given->items = v;
           compose();
         },
         "Override fields of the cuda backend's kernel policy, for A/B runs: comma-separated "
         "area.field=value items, e.g. attention.combine=separate,gemv.max_rows=0,pdl.mode=never. The "
         "defaults are the measured product choices (docs/kernel-policy.md lists every key, its values and "
         "the measurement behind its default); the startup log names the fields that differ. A bad key or "
         "value is an error; the cpu backend notes that the policy does not apply")
      ->type_name("ITEMS")
      ->check(CLI::Validator(check_items, "ITEMS"));
  app.add_flag_callback(
      "--enable-deterministic-inference",
      [given, compose] {
        given->deterministic = true;
        compose();
      },
      "Batch-invariant kernels on cuda (SGLang's flag; vLLM's VLLM_BATCH_INVARIANT): a request's tokens do not "
      "depend on what else is batched with it, and greedy output with a --speculative-model is token for token "
      "greedy output without one. Slower: every matmul on a 16-row-tile tensor-core kernel, attention never "
      "splits the keys (docs/speculative-decoding.md gives the cost). The same as --kernel-policy "
      "batch_invariant=true");
}

BackendOptions backend_options(const std::string& kernel_policy_items) {
  BackendOptions options;
  cuda::apply_policy_items(options.kernels, kernel_policy_items, kFlag);
  return options;
}

}  // namespace gs::cli
