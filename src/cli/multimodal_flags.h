// The image-input flags shared by `serve` and `run`, named as vLLM names them (--enable-multimodal
// is ours: text-only serving is the default and loads no vision tower).
#pragma once
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "api/multimodal_options.h"

namespace gs::cli {

struct MultimodalFlags {
  bool enable = false;
  std::string limit_mm_per_prompt;
  std::string mm_processor_kwargs;
  size_t max_image_bytes = api::MultimodalOptions{}.limits.max_bytes;
  int64_t max_image_pixels = api::MultimodalOptions{}.limits.max_pixels;
  std::string allowed_local_media_path;
  std::vector<std::string> allowed_media_domains;
  int media_fetch_timeout = api::MultimodalOptions{}.fetch_timeout_s;
};

void add_multimodal_options(CLI::App& app, MultimodalFlags& f);
// Checks the flags; throws gs::Error naming the one that is wrong.
api::MultimodalOptions resolve_multimodal(const MultimodalFlags& f);

}  // namespace gs::cli
