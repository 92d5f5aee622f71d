#include "engine/memory_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace gs {

namespace {

constexpr int S = int(KvGroup::Sliding), F = int(KvGroup::Full);

int ceil_div(long long a, long long b) { return int((a + b - 1) / b); }

std::string human_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) {
    b /= 1024;
    ++u;
  }
  return fmt::format("{:.2f} {}", b, units[u]);
}

// Sliding tokens one request keeps at most: the window before its next query, the chunk it runs
// and one partially filled page at each end.
long long sliding_tokens_per_request(const MemoryPlanInput& in, long long chunk) {
  return in.window - 1 + chunk + 2LL * in.page_size;
}

}  // namespace

int MemoryPlan::pages_per_request(KvGroup g, int len) const {
  if (num_pages[int(g)] == 0) return 0;
  int all = ceil_div(len, in.page_size);
  if (g == KvGroup::Full) return all;
  return std::min(all, ceil_div(in.window - 1, in.page_size) + 1);
}

long long MemoryPlan::requests_that_fit(int len) const {
  long long n = -1;
  for (int g = 0; g < kNumKvGroups; ++g) {
    int per = pages_per_request(KvGroup(g), len);
    if (per == 0) continue;
    long long fit = num_pages[g] / per;
    n = n < 0 ? fit : std::min(n, fit);
  }
  return std::max(0LL, n);
}

MemoryPlan plan_kv_memory(const MemoryPlanInput& in) {
  GS_CHECK(in.page_size > 0, "memory plan: page size must be positive, got {}", in.page_size);
  GS_CHECK(in.max_model_len > 0, "memory plan: max_model_len must be positive, got {}", in.max_model_len);
  GS_CHECK(in.swa_full_tokens_ratio >= 0, "--swa-full-tokens-ratio must be positive, got {}", in.swa_full_tokens_ratio);
  MemoryPlan plan;
  plan.in = in;
  plan.max_model_len = in.max_model_len;
  const double bs = double(in.kv_bytes_per_token[S]) * in.page_size;  // bytes per page
  const double bf = double(in.kv_bytes_per_token[F]) * in.page_size;
  plan.page_bytes[S] = size_t(bs);
  plan.page_bytes[F] = size_t(bf);
  const double budget = double(in.kv_budget_bytes);
  GS_CHECK(bs > 0 || bf > 0, "memory plan: the model has no KV cache layers");

  // Smallest useful pools: one request of max_model_len (full); one window plus a whole chunk (sliding).
  const int min_full = bf > 0 ? ceil_div(in.max_model_len, in.page_size) + 1 : 0;
  const int min_sliding =
      bs > 0 ? ceil_div(sliding_tokens_per_request(in, in.max_num_batched_tokens), in.page_size) + 1 : 0;

  if (bf == 0) {
    plan.num_pages[S] = int(std::min(budget / bs, 1e9));
    plan.swa_full_tokens_ratio = 0;
  } else if (bs == 0) {
    plan.num_pages[F] = int(std::min(budget / bf, 1e9));
    plan.swa_full_tokens_ratio = 0;
  } else {
    double ratio = in.swa_full_tokens_ratio;
    if (ratio == 0) {
      // Equal-length requests exhausting both pools together (see the header).
      const double C = std::max(1, in.max_num_seqs);
      const double chunk = std::max(1.0, double(in.max_num_batched_tokens) / C);
      const double s = double(sliding_tokens_per_request(in, (long long)chunk));
      const double per_req = budget / C;  // bytes per request
      const double tf = double(in.kv_bytes_per_token[F]), ts = double(in.kv_bytes_per_token[S]);
      double L = (per_req - s * ts) / tf;            // when L > s: full holds L, sliding holds s
      if (L <= s) L = per_req / (tf + ts);           // short requests: both hold L
      L = std::clamp(L, 1.0, double(in.max_model_len));
      ratio = std::min(1.0, std::min(L, s) / L);
    }
    plan.swa_full_tokens_ratio = ratio;
    // full_pages·bf + ratio·full_pages·bs = budget
    double full = budget / (bf + ratio * bs);
    plan.num_pages[F] = int(std::min(full, 1e9));
    plan.num_pages[S] = int(std::min(full * ratio, 1e9));
    // Respect the minimums by moving budget from the other pool; the sliding minimum (one window
    // and a chunk) comes first, since without it nothing runs at all.
    if (plan.num_pages[S] < min_sliding) {
      plan.num_pages[S] = std::min(min_sliding, int(budget / bs));
      plan.num_pages[F] = int(std::max(0.0, (budget - plan.num_pages[S] * bs) / bf));
    }
    if (plan.num_pages[F] < min_full) {
      plan.num_pages[F] = int(std::clamp((budget - min_sliding * bs) / bf, 0.0, double(min_full)));
      plan.num_pages[S] = int(std::max(0.0, (budget - plan.num_pages[F] * bf) / bs));
    }
    if (plan.num_pages[F] > 0) plan.swa_full_tokens_ratio = double(plan.num_pages[S]) / plan.num_pages[F];
  }

  GS_CHECK(double(plan.num_pages[S]) * bs + double(plan.num_pages[F]) * bf <= budget && plan.num_pages[S] >= min_sliding,
           "KV cache budget of {} holds {} sliding pages of {} tokens, but one request needs {} (window {} + a chunk of "
           "{} tokens); raise the KV memory (--gpu-memory-utilization / --kv-cache-memory-gib) or lower "
           "--max-num-batched-tokens",
           human_bytes(budget), plan.num_pages[S], in.page_size, min_sliding, in.window, in.max_num_batched_tokens);
  if (plan.num_pages[F] < min_full) {
    int fits = std::max(0, (plan.num_pages[F] - 1) * in.page_size);
    GS_CHECK(!in.max_model_len_explicit && fits > 0,
             "KV cache budget of {} holds {} full-attention pages ({} tokens), less than one request of "
             "--max-model-len {}; lower --max-model-len or raise the KV memory",
             human_bytes(budget), plan.num_pages[F], fits, in.max_model_len);
    plan.warning = fmt::format("max_model_len lowered from {} to {}: the KV budget of {} holds no more", in.max_model_len,
                               fits, human_bytes(budget));
    plan.max_model_len = fits;
  }
  return plan;
}

std::string MemoryPlan::describe() const {
  std::string out = fmt::format("memory plan ({}):\n", in.backend.empty() ? "?" : in.backend);
  out += fmt::format("  weights            {}\n", human_bytes(double(in.weights_bytes)));
  out += fmt::format("  activations        {}\n", human_bytes(double(in.workspace_bytes)));
  if (in.vision_weights_bytes)
    out += fmt::format("  vision tower       {} weights, {} activations ({} patches per pass), in the lines above\n",
                       human_bytes(double(in.vision_weights_bytes)), human_bytes(double(in.vision_workspace_bytes)),
                       in.vision_max_patches);
  out += fmt::format("  KV budget          {}\n", human_bytes(double(in.kv_budget_bytes)));
  out += fmt::format("  page size          {} tokens\n", in.page_size);
  const char* names[] = {"sliding", "full"};
  for (int g = 0; g < kNumKvGroups; ++g) {
    if (num_pages[g] == 0) {
      out += fmt::format("  {:<8} pool      none (no cache layers)\n", names[g]);
      continue;
    }
    out += fmt::format("  {:<8} pool      {} pages x {} = {} ({} tokens)\n", names[g], num_pages[g],
                       human_bytes(double(page_bytes[g])), human_bytes(double(page_bytes[g]) * num_pages[g]),
                       (long long)num_pages[g] * in.page_size);
  }
  if (num_pages[S] && num_pages[F]) out += fmt::format("  swa:full ratio     {:.4f}\n", swa_full_tokens_ratio);
  out += fmt::format("  fits at once       {} requests of {} tokens (max-model-len)", requests_that_fit(max_model_len),
                     max_model_len);
  if (max_model_len > 4096) out += fmt::format(", {} of 4096", requests_that_fit(4096));
  if (!warning.empty()) out += "\n  warning: " + warning;
  return out;
}

}  // namespace gs
