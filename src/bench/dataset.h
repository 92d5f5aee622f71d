// The prompts a benchmark sends: the `random`, `sharegpt` and `jsonl` datasets of
// `vllm bench serve` / SGLang's bench_serving, with token lengths measured by the model's tokenizer
// (bench_tokenizer.h: a local one or the server's).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_tokenizer.h"

namespace gs::bench {

struct BenchRequest {
  std::string prompt;
  int prompt_len = 0;   // tokens of `prompt` by the tokenizer; 0 when unknown (no tokenizer)
  int output_len = 0;   // max_tokens to ask for
  std::vector<std::string> image_urls;  // sent as image_url parts after the text (chat only; random-mm)
};

// How --random-range-ratio r turns a length L into the interval lengths are drawn from (uniform
// integers, both ends included). The two tools disagree, so numbers are only comparable when
// this matches the tool they are compared with:
//  vllm:   [int(L*(1-r)), int(L*(1+r))], r in [0, 1)   (vllm/benchmarks/datasets.py RandomDataset)
//  sglang: [int(L*r), L],                r in [0, 1]   (sglang/bench_serving.py sample_random_requests)
// Both raise the lower end to 1 (a 0-token prompt or output is not a request).
enum class RangeMode { Vllm, Sglang };
RangeMode parse_range_mode(const std::string& s);
const char* range_mode_name(RangeMode m);

struct LengthBounds {
  int lo = 0;
  int hi = 0;
};
LengthBounds length_bounds(int length, double ratio, RangeMode mode);

struct RandomDatasetOptions {
  int num_prompts = 0;
  int input_len = 1024;
  int output_len = 128;
  double range_ratio = 0;
  RangeMode range_mode = RangeMode::Vllm;
  int prefix_len = 0;  // tokens shared by every prompt, before its own random tokens
  uint64_t seed = 0;
};

// Prompts of random token ids decoded to text, re-encoded and adjusted until the text encodes to
// exactly the drawn length (prefix + own tokens). When a length cannot be hit exactly (a
// tokenizer that merges across every boundary), the closest found is used and recorded.
std::vector<BenchRequest> random_dataset(const BenchTokenizer& tok, const RandomDatasetOptions& o);

// ShareGPT JSON (a list of {"conversations": [{"from","value"}, ...]}), filtered as vLLM's
// ShareGPTDataset does: entries with at least two turns; prompt = turn 0, output length = the
// token length of turn 1 (or `fixed_output_len` when > 0); skipped when prompt or output is
// shorter than 4 tokens, the prompt is longer than 1024 or both together longer than 2048
// (the filter applies only when the output length comes from the data). Shuffled with `seed`.
std::vector<BenchRequest> sharegpt_dataset(const std::string& path, const BenchTokenizer& tok, int num_prompts,
                                           int fixed_output_len, uint64_t seed);

// One {"prompt": "...", "output_len": N} per line (output_len optional: `default_output_len`);
// blank lines skipped. `tok` may be null (prompt_len then comes from the server's usage).
// The first `num_prompts` lines are used in order (all when num_prompts <= 0).
std::vector<BenchRequest> jsonl_dataset(const std::string& path, const BenchTokenizer* tok, int num_prompts,
                                        int default_output_len);

}  // namespace gs::bench
