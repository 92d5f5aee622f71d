// What the server accepts as image input, set once at start-up from the serve/run flags
// (--enable-multimodal, --limit-mm-per-prompt, --mm-processor-kwargs, --max-image-bytes,
// --max-image-pixels, --allowed-local-media-path, --allowed-media-domains), and the token ids an
// image expands to, found in the tokenizer by name.
#pragma once
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"
#include "vision/image_decode.h"

namespace gs::api {

struct MultimodalOptions {
  bool enabled = false;             // --enable-multimodal: off, every image part is a 400
  int max_images_per_prompt = 8;    // --limit-mm-per-prompt image=N
  int default_budget = 280;         // --mm-processor-kwargs '{"max_soft_tokens": N}'
  ImageLimits limits;               // --max-image-bytes, --max-image-pixels
  std::string allowed_local_media_path;          // file:// URLs only below this directory; empty: refused
  std::vector<std::string> allowed_media_domains;  // http(s) URLs only to these hosts; empty: refused
  int fetch_timeout_s = 10;         // http(s) connect + read timeout
};

// The prompt layout of one image (architecture notes 4.3): the chat template writes one
// placeholder, the request path expands it into boi, soft tokens and eoi.
struct ImageTokenIds {
  int placeholder = -1;  // <|image|>: the template's placeholder and each soft token
  int boi = -1;          // <|image>
  int eoi = -1;          // <image|>
  bool complete() const { return placeholder >= 0 && boi >= 0 && eoi >= 0; }
  // By name rather than from config.json: the demo tokenizer numbers them differently from the
  // real vocabulary, and the names are what the processor uses.
  static ImageTokenIds from(const Tokenizer& tok);
};

// --limit-mm-per-prompt: vLLM's "image=4" or its JSON form '{"image": 4}'. Other modalities are
// refused (no audio or video input). Throws gs::Error naming the flag.
int parse_limit_mm_per_prompt(const std::string& text);
// --mm-processor-kwargs: '{"max_soft_tokens": 280}', the one processor argument there is.
int parse_mm_processor_kwargs(const std::string& json_text);

}  // namespace gs::api
