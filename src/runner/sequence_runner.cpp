#include "runner/sequence_runner.h"

#include <algorithm>

#include "core/error.h"
#include "runner/batch_builder.h"
#include "runner/step_images.h"

namespace gs {

LogitsMode parse_logits_mode(const std::string& s) {
  if (s == "prefill") return LogitsMode::Prefill;
  if (s == "decode") return LogitsMode::Decode;
  if (s == "chunked") return LogitsMode::Chunked;
  throw Error("unknown mode '{}' (expected prefill, decode or chunked)", s);
}

SequenceRunner::SequenceRunner(Gemma4Model& model, int max_step_tokens, int max_total_tokens, int page_size,
                               bool recycle_sliding_pages)
    : model_(model), page_size_(page_size), max_step_(max_step_tokens), max_total_(max_total_tokens),
      recycle_(recycle_sliding_pages) {
  GS_CHECK(page_size > 0 && max_step_tokens > 0 && max_total_tokens >= max_step_tokens,
           "sequence runner: page size {}, step {}, total {}", page_size, max_step_tokens, max_total_tokens);
  const ModelConfig& cfg = model.config();
  for (const LayerSpec& l : cfg.layers)
    if (l.type == LayerType::Sliding) window_ = std::max(window_, l.sliding_window);
  const int all_pages = (max_total_tokens + page_size - 1) / page_size;
  num_pages_[int(KvGroup::Full)] = all_pages;
  // The sliding pool only ever holds the last W-1 tokens plus one step, spread over at most two
  // partially used pages.
  num_pages_[int(KvGroup::Sliding)] =
      recycle_ && window_ > 0 ? std::min(all_pages, (window_ - 1 + max_step_tokens + page_size - 1) / page_size + 1)
                              : all_pages;
  cache_ = model.backend().allocate_kv_cache(cfg.kv_layout(), page_size, num_pages_);
  model.reserve(max_step_tokens, max_step_tokens);
}

int SequenceRunner::take_page(int g) {
  if (!free_[g].empty()) {
    const int p = free_[g].back();
    free_[g].pop_back();
    return p;
  }
  GS_CHECK(next_page_[g] < num_pages_[g], "sequence runner: {} KV pool exhausted ({} pages)",
           g == int(KvGroup::Full) ? "full" : "sliding", num_pages_[g]);
  return next_page_[g]++;
}

void SequenceRunner::release_invisible_sliding_pages() {
  if (!recycle_ || window_ <= 0) return;
  // The next query is at position length_ or later; it sees keys > length_ - W.
  const int first_visible = std::max(0, length_ - window_ + 1);
  auto& t = table_[int(KvGroup::Sliding)];
  for (int lp = 0; lp < int(t.size()) && (lp + 1) * page_size_ <= first_visible; ++lp) {
    if (t[size_t(lp)] < 0) continue;
    free_[int(KvGroup::Sliding)].push_back(t[size_t(lp)]);
    t[size_t(lp)] = -1;
  }
}

int SequenceRunner::sliding_pages_held() const {
  const auto& t = table_[int(KvGroup::Sliding)];
  return int(std::count_if(t.begin(), t.end(), [](int p) { return p >= 0; }));
}

std::vector<float> SequenceRunner::step(const std::vector<int>& tokens) {
  const int n = int(tokens.size());
  GS_CHECK(n > 0 && n <= max_step_, "sequence runner: step of {} tokens (1..{})", n, max_step_);
  GS_CHECK(length_ + n <= max_total_, "sequence runner: {} tokens exceed the {} reserved", length_ + n, max_total_);
  for (int g = 0; g < kNumKvGroups; ++g)
    while (int(table_[g].size()) * page_size_ < length_ + n) table_[g].push_back(take_page(g));

  Backend& be = model_.backend();
  SequenceStep st;
  st.start = length_;
  st.q_len = n;
  st.page_table[0] = &table_[0];
  st.page_table[1] = &table_[1];

  StepImages images;
  if (images_) {
    st.mm_block = &images_->mm_block;
    st.images = &images_->images;
    collect_step_images(st, 0, images);
  }
  AttentionBatch batch = build_attention_batch(be, {st}, page_size_);

  std::vector<int> embed_ids(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) embed_ids[i] = model_.embedding_id(tokens[i]);
  Tensor ids = be.empty(DType::I32, Shape{n});
  be.copy_from_host(ids, embed_ids.data());
  std::vector<int> rows(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) rows[size_t(i)] = i;
  Tensor logit_rows = be.empty(DType::I32, Shape{n});
  be.copy_from_host(logit_rows, rows.data());

  be.set_step_rows(n);
  ForwardOutput out = model_.forward(ids, batch, cache_, logit_rows, &images);
  std::vector<float> logits(size_t(out.logits.numel()));
  be.copy_to_host(out.logits, logits.data());
  length_ += n;
  release_invisible_sliding_pages();
  return logits;
}

namespace {
// Where the prompt's steps end: one step (prefill), one token at a time (decode) or chunks, none of
// them splitting an image.
std::vector<int> prompt_step_ends(const SequenceRunOptions& opt, int total, const PromptImages* images) {
  static const std::vector<int> kNoBlocks;
  const std::vector<int>& blocks = images ? images->mm_block : kNoBlocks;
  switch (opt.mode) {
    case LogitsMode::Prefill: return {total};
    case LogitsMode::Decode: return chunk_ends(total, 1, blocks);
    case LogitsMode::Chunked:
      GS_CHECK(opt.chunk > 0, "chunked mode needs a chunk size > 0 (got {})", opt.chunk);
      return chunk_ends(total, opt.chunk, blocks);
  }
  return {total};
}

int longest_step(const std::vector<int>& ends) {
  int longest = 1, prev = 0;
  for (int e : ends) longest = std::max(longest, e - prev), prev = e;
  return longest;
}

void check_images(const std::vector<int>& tokens, const PromptImages* images) {
  GS_CHECK(!images || images->tokens == tokens, "sequence runner: the images belong to another (expanded) prompt");
}
}  // namespace

std::vector<float> sequence_logits(Gemma4Model& model, const std::vector<int>& tokens, const SequenceRunOptions& opt,
                                   const PromptImages* images) {
  const int T = int(tokens.size());
  GS_CHECK(T > 0, "sequence_logits: no tokens");
  check_images(tokens, images);
  const std::vector<int> ends = prompt_step_ends(opt, T, images);
  SequenceRunner runner(model, longest_step(ends), T, opt.page_size, opt.recycle_sliding_pages);
  runner.set_images(images);
  std::vector<float> logits;
  logits.reserve(size_t(T) * model.config().vocab_size);
  int start = 0;
  for (int end : ends) {
    std::vector<float> l = runner.step(std::vector<int>(tokens.begin() + start, tokens.begin() + end));
    logits.insert(logits.end(), l.begin(), l.end());
    start = end;
  }
  return logits;
}

std::vector<int> greedy_continuation(Gemma4Model& model, const std::vector<int>& prompt, int new_tokens,
                                     const SequenceRunOptions& opt, const PromptImages* images) {
  const int T = int(prompt.size()), V = model.config().vocab_size;
  GS_CHECK(T > 0 && new_tokens >= 0, "greedy_continuation: {} prompt tokens, {} new", T, new_tokens);
  check_images(prompt, images);
  const std::vector<int> ends = prompt_step_ends(opt, T, images);
  SequenceRunner runner(model, longest_step(ends), T + new_tokens, opt.page_size, opt.recycle_sliding_pages);
  runner.set_images(images);
  std::vector<float> last;
  int start = 0;
  for (int end : ends) {
    last = runner.step(std::vector<int>(prompt.begin() + start, prompt.begin() + end));
    start = end;
  }
  std::vector<int> out;
  for (int k = 0; k < new_tokens; ++k) {
    const float* row = last.data() + last.size() - size_t(V);
    const int next = int(std::max_element(row, row + V) - row);  // first maximum: lowest id on ties
    out.push_back(next);
    if (k + 1 < new_tokens) last = runner.step({next});
  }
  return out;
}

}  // namespace gs
