// The table of kernel policy items (kernel_policy_items.h): one row per KernelPolicy field.
#include "kernels/kernel_policy_items.h"

#include <fmt/format.h>

#include <charconv>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <optional>
#include <utility>

#include "core/error.h"

namespace gs::cuda {

namespace {

constexpr double kMiB = double(1 << 20);

// How one field's value reads and writes as text. Values travel as int64_t: a count, a size in
// bytes, 0/1, or an enum's position in its list of names (the enum's declaration order).
struct Form {
  std::string accepts;  // what the value may be, as an error says it
  std::function<std::optional<int64_t>(std::string_view)> read;
  std::function<std::string(int64_t)> write;
};

struct Field {
  std::string key;  // "area.field"
  Form form;
  int64_t (*get)(const KernelPolicy&);
  void (*set)(KernelPolicy&, int64_t);
};

// The get/set pair of one member path of KernelPolicy, e.g. GS_POLICY_MEMBER(gemv.max_rows): the
// path is written once, so a row cannot read one field and write another.
#define GS_POLICY_MEMBER(path)                             \
  [](const KernelPolicy& p) { return int64_t(p.path); }, \
      [](KernelPolicy& p, int64_t v) { p.path = decltype(p.path)(v); }

std::optional<int64_t> integer(std::string_view s) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// An integer in [lo, hi] (hi INT_MAX: no bound beyond what an int holds).
Form count(int64_t lo, int64_t hi = INT_MAX) {
  return {hi == INT_MAX ? fmt::format("an integer >= {}", lo) : fmt::format("an integer {}-{}", lo, hi),
          [lo, hi](std::string_view s) -> std::optional<int64_t> {
            std::optional<int64_t> v = integer(s);
            if (!v || *v < lo || *v > hi) return std::nullopt;
            return v;
          },
          [](int64_t v) { return std::to_string(v); }};
}

// One of a few integers the kernels are built for.
Form one_of(std::vector<int64_t> allowed) {
  std::string accepts;
  for (size_t i = 0; i < allowed.size(); ++i)
    accepts += fmt::format("{}{}", i == 0 ? "" : i + 1 == allowed.size() ? " or " : ", ", allowed[i]);
  return {accepts,
          [allowed](std::string_view s) -> std::optional<int64_t> {
            std::optional<int64_t> v = integer(s);
            for (int64_t a : allowed)
              if (v && *v == a) return v;
            return std::nullopt;
          },
          [](int64_t v) { return std::to_string(v); }};
}

// A size given in MiB and kept in bytes (truncated to a byte, as the developer variables always
// did). `unbounded`: the word "unbounded" stands for no bound (INT64_MAX).
Form mebibytes(bool unbounded) {
  return {unbounded ? "a size in MiB >= 0, or unbounded" : "a size in MiB >= 0",
          [unbounded](std::string_view s) -> std::optional<int64_t> {
            if (unbounded && s == "unbounded") return INT64_MAX;
            const std::string text(s);
            char* end = nullptr;
            const double mib = std::strtod(text.c_str(), &end);
            // Up to 2^42 MiB (4 EiB) so the bytes fit an int64_t.
            if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(mib) || mib < 0 ||
                mib > std::ldexp(1.0, 42))
              return std::nullopt;
            return int64_t(mib * kMiB);
          },
          [](int64_t bytes) {
            // Bytes below 2^53 are exact as a double; "{}" writes the shortest text that reads back.
            return bytes == INT64_MAX ? std::string("unbounded") : fmt::format("{}", double(bytes) / kMiB);
          }};
}

Form flag() {
  return {"true or false (also 1/0, on/off)",
          [](std::string_view s) -> std::optional<int64_t> {
            if (s == "true" || s == "1" || s == "on") return 1;
            if (s == "false" || s == "0" || s == "off") return 0;
            return std::nullopt;
          },
          [](int64_t v) { return std::string(v ? "true" : "false"); }};
}

// An enum by its lower-case names, listed in the enum's declaration order.
Form names(std::vector<std::string> list) {
  std::string accepts;
  for (size_t i = 0; i < list.size(); ++i)
    accepts += (i == 0 ? "" : i + 1 == list.size() ? " or " : ", ") + list[i];
  return {accepts,
          [list](std::string_view s) -> std::optional<int64_t> {
            for (size_t i = 0; i < list.size(); ++i)
              if (s == list[i]) return int64_t(i);
            return std::nullopt;
          },
          [list](int64_t v) { return v >= 0 && size_t(v) < list.size() ? list[size_t(v)] : std::to_string(v); }};
}

// Every field of KernelPolicy, area by area as kernel_policy.h declares them. The meaning of each
// and the measurement behind its default: docs/kernel-policy.md.
const std::vector<Field>& fields() {
  static const std::vector<Field> table = {
      {"gemv.max_rows", count(0, kPolicyGemvMaxRows), GS_POLICY_MEMBER(gemv.max_rows)},
      {"gemv.two_row_max_dim", count(0), GS_POLICY_MEMBER(gemv.two_row_max_dim)},
      {"gemv.max_weight_mib", mebibytes(true), GS_POLICY_MEMBER(gemv.max_weight_bytes)},
      {"gemv.mma_max_rows", count(0, kPolicyGemvMaxRows), GS_POLICY_MEMBER(gemv.mma_max_rows)},
      {"gemv.mma_max_mib", mebibytes(false), GS_POLICY_MEMBER(gemv.mma_max_bytes)},
      {"gemv.mma_max_k", count(0), GS_POLICY_MEMBER(gemv.mma_max_k)},
      {"gemv.mma_fused_max_mib", mebibytes(false), GS_POLICY_MEMBER(gemv.mma_fused_max_bytes)},
      // One past the GEMV's rows: the tensor-core variant never runs.
      {"gemv.mma_min_rows", count(1, kPolicyGemvMaxRows + 1), GS_POLICY_MEMBER(gemv.mma_min_rows)},
      {"gemv.mma_stages", count(2, 4), GS_POLICY_MEMBER(gemv.mma_shape.stages)},
      {"gemv.mma_tiles", count(1, 2), GS_POLICY_MEMBER(gemv.mma_shape.tiles)},
      {"gemv.mma_warps_per_sm", count(1), GS_POLICY_MEMBER(gemv.mma_shape.warps_per_sm)},
      {"gemv.mma_split_min_stages", count(1, 4), GS_POLICY_MEMBER(gemv.mma_shape.split_min_stages)},
      {"gemv.min_blocks_per_sm", count(1), GS_POLICY_MEMBER(gemv.min_blocks_per_sm)},
      {"gemv.streaming", flag(), GS_POLICY_MEMBER(gemv.streaming)},
      {"gemv.l2_prefetch_mib", mebibytes(false), GS_POLICY_MEMBER(gemv.l2_prefetch_bytes)},
      {"attention.hd256_decode", names({"auto", "narrow", "split8"}), GS_POLICY_MEMBER(attention.hd256_decode)},
      {"attention.hd512_prefill", names({"pair_persistent", "pair"}), GS_POLICY_MEMBER(attention.hd512_prefill)},
      {"attention.combine", names({"auto", "fused", "separate"}), GS_POLICY_MEMBER(attention.combine)},
      {"attention.min_tiles_per_split", count(0), GS_POLICY_MEMBER(attention.min_tiles_per_split)},
      {"attention.max_splits", count(0, kPolicyMaxSplits), GS_POLICY_MEMBER(attention.max_splits)},
      {"attention.narrow_max_rows", count(16), GS_POLICY_MEMBER(attention.narrow_max_rows)},
      {"attention.narrow_max_kv_mib", mebibytes(false), GS_POLICY_MEMBER(attention.narrow_max_kv_bytes)},
      {"attention.tma_qo", flag(), GS_POLICY_MEMBER(attention.tma_qo)},
      {"attention.aligned_key_tiles", flag(), GS_POLICY_MEMBER(attention.aligned_key_tiles)},
      {"pdl.mode", names({"by_step_rows", "always", "never"}), GS_POLICY_MEMBER(pdl.mode)},
      {"pdl.max_step_rows", count(0), GS_POLICY_MEMBER(pdl.max_step_rows)},
      {"sampling.window", flag(), GS_POLICY_MEMBER(sampling.window)},
      {"sampling.team", one_of({0, 1, 2, 4, 8}), GS_POLICY_MEMBER(sampling.team)},
      {"moe.path", names({"auto", "gemv", "mma16", "mma64"}), GS_POLICY_MEMBER(moe.path)},
      {"moe.gemv_max_rows", count(0), GS_POLICY_MEMBER(moe.gemv_max_rows)},
      {"moe.mma64_bn", one_of({64, 128}), GS_POLICY_MEMBER(moe.mma64_bn)},
      {"gemm.exact_plans", flag(), GS_POLICY_MEMBER(gemm.exact_plans)},
      {"batch_invariant", flag(), GS_POLICY_MEMBER(batch_invariant)},
  };
  return table;
}

#undef GS_POLICY_MEMBER

// The enums' names above are positions: keep them in step with the declarations.
static_assert(int(Hd256Decode::Split8) == 2 && int(Hd512Prefill::Pair) == 1 && int(CombineMode::Separate) == 2 &&
              int(PdlMode::Never) == 2 && int(MoePath::Mma64) == 3);

const Field* find(std::string_view key) {
  for (const Field& f : fields())
    if (f.key == key) return &f;
  return nullptr;
}

std::string_view trim(std::string_view s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

std::string joined_keys() {
  std::string out;
  for (const Field& f : fields()) out += (out.empty() ? "" : ", ") + f.key;
  return out;
}

}  // namespace

void apply_policy_items(KernelPolicy& policy, std::string_view items, std::string_view source) {
  KernelPolicy p = policy;
  while (!items.empty()) {
    const size_t comma = items.find(',');
    const std::string_view item = trim(items.substr(0, comma));
    items = comma == std::string_view::npos ? std::string_view() : items.substr(comma + 1);
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    GS_CHECK(eq != std::string_view::npos, "{}: '{}' is not a key=value item (e.g. attention.combine=separate)",
             source, item);
    const std::string_view key = trim(item.substr(0, eq));
    const std::string_view value = trim(item.substr(eq + 1));
    const Field* f = find(key);
    GS_CHECK(f, "{}: unknown key '{}'; the keys are: {}", source, key, joined_keys());
    const std::optional<int64_t> v = f->form.read(value);
    GS_CHECK(v, "{}: {}={}: expected {}", source, key, value, f->form.accepts);
    f->set(p, *v);
  }
  policy = p;
}

std::vector<std::string> policy_keys() {
  std::vector<std::string> keys;
  for (const Field& f : fields()) keys.push_back(f.key);
  return keys;
}

std::string policy_value(const KernelPolicy& policy, std::string_view key) {
  const Field* f = find(key);
  GS_CHECK(f, "unknown kernel policy key '{}'; the keys are: {}", key, joined_keys());
  return f->form.write(f->get(policy));
}

std::string policy_differences(const KernelPolicy& policy, const KernelPolicy& base) {
  std::string out;
  for (const Field& f : fields()) {
    const int64_t v = f.get(policy);
    if (v != f.get(base)) out += fmt::format("{}{}={}", out.empty() ? "" : ",", f.key, f.form.write(v));
  }
  return out;
}

}  // namespace gs::cuda
