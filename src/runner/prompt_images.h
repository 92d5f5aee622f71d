// A prompt with images as the model reads it: each image placeholder expanded the way the reference
// processor does (begin-of-image, one image token per soft token, end-of-image), and the vision
// block of every position. Used by `gemmaserve logits --image` and the parity tests; the request
// path builds the same from the chat template's placeholders.
#pragma once
#include <vector>

#include "model/model_config.h"
#include "vision/prepared_image.h"

namespace gs {

struct PromptImages {
  std::vector<int> tokens;                // expanded prompt
  std::vector<int> mm_block;              // per token: the image index of a soft token, else -1
  std::vector<PreparedImagePtr> images;   // block b is images[b]
};

// The ids of an image in a prompt: the placeholder (also each soft token), begin- and end-of-image.
struct ImagePromptTokens {
  int placeholder = -1, boi = -1, eoi = -1;
};

// Every placeholder in `tokens` stands for the next image of `images` (in order) and becomes
// boi + soft_tokens × placeholder + eoi. Throws gs::Error when the counts differ.
PromptImages expand_image_placeholders(const std::vector<int>& tokens, const ImagePromptTokens& ids,
                                       std::vector<PreparedImagePtr> images);
// With the model config's ids (image_token_id, boi_token_id, eoi_token_id): token files of the tools.
PromptImages expand_image_placeholders(const std::vector<int>& tokens, const ModelConfig& cfg,
                                       std::vector<PreparedImagePtr> images);

// Chunk boundaries of a prompt of `n` tokens for steps of at most `chunk` tokens that never split a
// vision block: a chunk ending inside a block ends before it instead, or, when the block starts the
// chunk, takes the whole block (a block longer than `chunk` gets its own step).
std::vector<int> chunk_ends(int n, int chunk, const std::vector<int>& mm_block);

}  // namespace gs
