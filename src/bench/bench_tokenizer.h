// What a benchmark needs from the model's tokenizer: prompts of exact token lengths (random ids
// decoded to text, re-encoded until the length is right) and token counts of text. Either a
// tokenizer loaded here (--tokenizer) or the server's own, over its POST /tokenize and
// /detokenize, so benchmarking a gemmaserve (or vLLM) server needs no tokenizer files.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace gs {
class Tokenizer;
}

namespace gs::bench {

class BenchTokenizer {
 public:
  virtual ~BenchTokenizer() = default;
  // The ids of `text` as the server counts a prompt's text: no BOS added.
  virtual std::vector<int> encode(const std::string& text) const = 0;
  // The text of `ids`, special tokens included.
  virtual std::string decode(const std::vector<int>& ids) const = 0;
  // The ids random prompts are drawn from: ordinary tokens, neither special nor byte-fallback
  // pieces (whose random runs decode to invalid UTF-8 that re-encodes to something else).
  // `seed` picks the sample when only a sample of the vocabulary is probed.
  virtual std::vector<int> prompt_token_pool(uint64_t seed) const = 0;
  // Where the tokenizer is, for logs and the config of --output-json.
  virtual std::string description() const = 0;
};

// A tokenizer.json, model directory or .gguf (Tokenizer::load). Throws gs::Error.
std::unique_ptr<BenchTokenizer> local_bench_tokenizer(const std::string& path);
std::unique_ptr<BenchTokenizer> local_bench_tokenizer(std::shared_ptr<const Tokenizer> tok, std::string description);

// The server's tokenizer. Throws gs::Error saying why when the server does not tokenize (no
// POST /tokenize, an error, not a token list), so the caller can ask for --tokenizer instead.
std::unique_ptr<BenchTokenizer> server_bench_tokenizer(const std::string& base_url, const std::string& api_key,
                                                       const std::string& model, double timeout_s);

}  // namespace gs::bench
