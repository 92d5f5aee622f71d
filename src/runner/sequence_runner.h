// Runs one token sequence through a Gemma4Model without the engine: the paged cache, page tables
// and batches are managed here, one step at a time. Used by `gemmaserve logits` and the parity
// tests, and the simplest example of driving the model.
//
// Sliding-window pages whose tokens can no longer be seen are returned to a free list and reused
// (as the engine does), so a sliding pool of about W + chunk tokens serves any sequence length.
#pragma once
#include <vector>

#include "model/gemma4_model.h"
#include "runner/prompt_images.h"

namespace gs {

enum class LogitsMode { Prefill, Decode, Chunked };
LogitsMode parse_logits_mode(const std::string& s);  // "prefill" | "decode" | "chunked"

struct SequenceRunOptions {
  LogitsMode mode = LogitsMode::Prefill;
  int chunk = 0;                  // tokens per step in Chunked mode (> 0)
  int page_size = 16;
  bool recycle_sliding_pages = true;
};

class SequenceRunner {
 public:
  // max_step_tokens: the largest step this runner will take; max_total_tokens: the longest sequence.
  SequenceRunner(Gemma4Model& model, int max_step_tokens, int max_total_tokens, int page_size = 16,
                 bool recycle_sliding_pages = true);

  // The prompt's images: vision blocks by position and the images behind them (both kept by
  // reference; null: none). Steps then run the tower for the images they prefill and apply the
  // overlay; a step must hold each image whole.
  void set_images(const PromptImages* images) { images_ = images; }
  // Appends `tokens` to the sequence in one forward; returns f32 logits [tokens.size(), V] on the host.
  std::vector<float> step(const std::vector<int>& tokens);
  int length() const { return length_; }
  // Sliding pages the sequence holds now (freed ones excluded).
  int sliding_pages_held() const;

 private:
  int take_page(int group);
  void release_invisible_sliding_pages();

  Gemma4Model& model_;
  int page_size_, max_step_, max_total_;
  bool recycle_;
  int window_ = 0;                        // widest sliding window of the model (0: none)
  KvCache cache_;
  std::vector<int> table_[kNumKvGroups];  // logical page -> physical page, -1 once freed
  std::vector<int> free_[kNumKvGroups];
  int next_page_[kNumKvGroups] = {0, 0};
  int num_pages_[kNumKvGroups] = {0, 0};
  int length_ = 0;
  const PromptImages* images_ = nullptr;
};

// Logits [T, V] of every position of `tokens`, computed in the given mode from an empty cache.
// With images (tokens == images->tokens, expanded), decode and chunked steps never split an image:
// its soft tokens go in one step.
std::vector<float> sequence_logits(Gemma4Model& model, const std::vector<int>& tokens, const SequenceRunOptions& opt,
                                   const PromptImages* images = nullptr);

// Greedy continuation of `prompt` (argmax, ties to the lowest id) for `new_tokens` steps, the
// prompt run in the given mode and every new token decoded one at a time.
std::vector<int> greedy_continuation(Gemma4Model& model, const std::vector<int>& prompt, int new_tokens,
                                     const SequenceRunOptions& opt, const PromptImages* images = nullptr);

}  // namespace gs
