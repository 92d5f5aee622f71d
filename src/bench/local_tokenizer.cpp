// BenchTokenizer over a tokenizer loaded in this process (--tokenizer).
#include "bench/bench_tokenizer.h"
#include "core/error.h"
#include "tokenizer/tokenizer.h"

namespace gs::bench {
namespace {

class LocalTokenizer : public BenchTokenizer {
 public:
  LocalTokenizer(std::shared_ptr<const Tokenizer> tok, std::string description)
      : tok_(std::move(tok)), description_(std::move(description)) {}

  std::vector<int> encode(const std::string& text) const override { return tok_->encode(text); }
  std::string decode(const std::vector<int>& ids) const override { return tok_->decode(ids); }

  // The whole vocabulary is at hand: every ordinary id.
  std::vector<int> prompt_token_pool(uint64_t) const override {
    std::vector<int> ids;
    for (int id = 0; id < tok_->vocab_size(); ++id) {
      if (tok_->is_special(id)) continue;
      const std::string_view t = tok_->token_text(id);
      if (t.empty() || t.rfind("<0x", 0) == 0) continue;
      ids.push_back(id);
    }
    return ids;
  }

  std::string description() const override { return description_; }

 private:
  std::shared_ptr<const Tokenizer> tok_;
  std::string description_;
};

}  // namespace

std::unique_ptr<BenchTokenizer> local_bench_tokenizer(const std::string& path) {
  return local_bench_tokenizer(Tokenizer::load(path), path);
}

std::unique_ptr<BenchTokenizer> local_bench_tokenizer(std::shared_ptr<const Tokenizer> tok, std::string description) {
  GS_CHECK(tok, "local_bench_tokenizer: no tokenizer");
  return std::make_unique<LocalTokenizer>(std::move(tok), std::move(description));
}

}  // namespace gs::bench
