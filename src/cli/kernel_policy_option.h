// --kernel-policy ITEMS and --enable-deterministic-inference (the item batch_invariant=true), on every
// command that creates a backend (serve, run, logits, bench-decode,
// bench-kernels): the cuda backend's kernel choices for A/B runs (kernels/kernel_policy_items.h).
#pragma once
#include <CLI/CLI.hpp>

#include <string>

#include "kernels/backends.h"

namespace gs::cli {

// Adds the flag to `app`; the items land in `items` as given.
void add_kernel_policy_option(CLI::App& app, std::string& items);

// The options to create a backend with for the flag's items (empty: the product defaults). Throws
// gs::Error naming a bad item and what its key takes, or listing the keys.
BackendOptions backend_options(const std::string& kernel_policy_items);

}  // namespace gs::cli
