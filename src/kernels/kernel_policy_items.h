// The kernel policy (kernels/cuda/kernel_policy.h) as text: "area.field=value" items, comma
// separated, e.g. "attention.combine=separate,gemv.max_rows=0,pdl.mode=never". One table names
// every field: `--kernel-policy` on the command line and the developer variables
// (kernel_policy_env.cpp) both go through it, and the startup log writes the fields that differ
// from the defaults in the same form. Plain C++, built with or without CUDA.
//
// Values: integers in the range the kernels are built for, sizes in MiB (fractions allowed; the
// GEMV's one-row bound also takes "unbounded"), booleans as true/false (also 1/0, on/off), enums
// by their lower-case names. The full list: docs/kernel-policy.md, or any unknown key's error.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "kernels/cuda/kernel_policy.h"

namespace gs::cuda {

// Applies `items` to `policy` in order (a later item for the same key wins; empty items and spaces
// around them are ignored). Throws gs::Error, prefixed with `source` (the flag or variable the
// items came from), naming the bad item and what its key accepts, or listing the keys when the
// key is unknown. `policy` is unchanged when an item is refused.
void apply_policy_items(KernelPolicy& policy, std::string_view items, std::string_view source = "kernel policy");

// Every key, in the table's order (area by area, as KernelPolicy declares them).
std::vector<std::string> policy_keys();

// The value of one key as an item writes it (apply_policy_items reads it back to the same field).
// Throws gs::Error for an unknown key.
std::string policy_value(const KernelPolicy& policy, std::string_view key);

// The items of the fields where `policy` differs from `base`, comma separated ("" when none):
// what `--kernel-policy` would take to turn `base` into `policy`.
std::string policy_differences(const KernelPolicy& policy, const KernelPolicy& base = {});

// `base` with the developer variables (kernel_policy_env.cpp) applied. Throws gs::Error naming a
// variable whose value its field does not accept.
KernelPolicy apply_developer_env(KernelPolicy base);

}  // namespace gs::cuda
