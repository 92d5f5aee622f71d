#include "cli/kernel_policy_option.h"

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
  app.add_option(kFlag, items,
                 "Override fields of the cuda backend's kernel policy, for A/B runs: comma-separated "
                 "area.field=value items, e.g. attention.combine=separate,gemv.max_rows=0,pdl.mode=never. The "
                 "defaults are the measured product choices (docs/kernel-policy.md lists every key, its values and "
                 "the measurement behind its default); the startup log names the fields that differ. A bad key or "
                 "value is an error; the cpu backend notes that the policy does not apply")
      ->type_name("ITEMS")
      ->check(CLI::Validator(check_items, "ITEMS"));
}

BackendOptions backend_options(const std::string& kernel_policy_items) {
  BackendOptions options;
  cuda::apply_policy_items(options.kernels, kernel_policy_items, kFlag);
  return options;
}

}  // namespace gs::cli
