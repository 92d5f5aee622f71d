// The `random` dataset: prompts of exact token lengths made from random token ids.
#include <algorithm>
#include <cstdlib>
#include <random>

#include "bench/dataset.h"
#include "core/error.h"
#include "core/log.h"

namespace gs::bench {
namespace {

struct ExactText {
  std::string text;
  int len = 0;
};

// Decoding ids and encoding the text again need not give the same ids (tokens merge across the
// joins, the prefix's last token with the first drawn one included), so adjust the drawn ids by the
// miss: cut from the end what is too long, draw more for what is too short, until the text encodes
// to `target` tokens. A redraw every few attempts escapes a cut and a top-up that keep undoing each
// other. `fixed` ids (the shared prefix) are never changed.
ExactText exact_length_text(const BenchTokenizer& tok, const std::vector<int>& fixed, std::vector<int> ids, int target,
                            const std::vector<int>& pool, std::mt19937_64& rng) {
  std::uniform_int_distribution<size_t> pick(0, pool.size() - 1);
  const size_t own_target = size_t(std::max(target - static_cast<int>(fixed.size()), 0));
  ExactText best;
  int best_gap = -1;
  for (int attempt = 0; attempt < 64; ++attempt) {
    std::vector<int> all = fixed;
    all.insert(all.end(), ids.begin(), ids.end());
    std::string text = tok.decode(all);
    const int n = static_cast<int>(tok.encode(text).size());
    const int gap = std::abs(n - target);
    if (best_gap < 0 || gap < best_gap) {
      best = {text, n};
      best_gap = gap;
    }
    if (n == target) return best;
    if (attempt % 8 == 7) {
      ids.resize(own_target);
      for (int& id : ids) id = pool[pick(rng)];
    } else if (n > target) {
      ids.resize(ids.size() - std::min(ids.size(), size_t(n - target)));
    } else {
      for (int k = 0; k < target - n; ++k) ids.push_back(pool[pick(rng)]);
    }
  }
  return best;
}

}  // namespace

std::vector<BenchRequest> random_dataset(const BenchTokenizer& tok, const RandomDatasetOptions& o) {
  GS_CHECK(o.num_prompts >= 1, "random dataset: --num-prompts must be at least 1 (got {})", o.num_prompts);
  GS_CHECK(o.prefix_len >= 0, "random dataset: --random-prefix-len must be >= 0 (got {})", o.prefix_len);
  const LengthBounds in = length_bounds(o.input_len, o.range_ratio, o.range_mode);
  const LengthBounds out = length_bounds(o.output_len, o.range_ratio, o.range_mode);
  // Not special and not byte-fallback pieces: random runs of those decode to invalid UTF-8 that
  // re-encodes to something else entirely and slows the length fixing down.
  const std::vector<int> pool = tok.prompt_token_pool(o.seed);
  GS_CHECK(!pool.empty(), "random dataset: the tokenizer ({}) has no ordinary tokens to draw prompts from",
           tok.description());
  std::mt19937_64 rng(o.seed);
  std::uniform_int_distribution<size_t> pick(0, pool.size() - 1);
  std::uniform_int_distribution<int> in_len(in.lo, in.hi), out_len(out.lo, out.hi);

  // The shared prefix is itself fixed to an exact length once, then kept as ids.
  std::vector<int> prefix;
  if (o.prefix_len > 0) {
    std::vector<int> draw(static_cast<size_t>(o.prefix_len));
    for (int& id : draw) id = pool[pick(rng)];
    const ExactText p = exact_length_text(tok, {}, draw, o.prefix_len, pool, rng);
    prefix = tok.encode(p.text);
  }

  std::vector<BenchRequest> out_reqs;
  int inexact = 0;
  for (int i = 0; i < o.num_prompts; ++i) {
    const int own = in_len(rng);
    std::vector<int> draw(static_cast<size_t>(own));
    for (int& id : draw) id = pool[pick(rng)];
    const int target = static_cast<int>(prefix.size()) + own;
    ExactText t = exact_length_text(tok, prefix, draw, target, pool, rng);
    if (t.len != target) ++inexact;
    out_reqs.push_back({std::move(t.text), t.len, out_len(rng), {}});
  }
  if (inexact > 0) log::warn("random dataset: {} of {} prompts could not be made exactly their drawn length; their "
                             "real token counts are used", inexact, o.num_prompts);
  return out_reqs;
}

}  // namespace gs::bench
