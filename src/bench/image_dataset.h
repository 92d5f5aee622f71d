// Images for the `random-mm` dataset (vLLM's `--dataset-name random-mm`): each request of a random
// text dataset also carries N images of random pixels, sent as image_url parts with data: URLs.
// The images are uncompressed BMP: no encoder library, every byte random, and the server decodes
// them in no time, so a benchmark measures the server's preprocessing, tower and prefill.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "bench/dataset.h"

namespace gs::bench {

struct ImageSize {
  int height = 0, width = 0;
};

struct RandomMmOptions {
  int items_per_request = 1;                     // --random-mm-base-items-per-request
  std::vector<ImageSize> sizes = {{720, 1280}};  // --random-mm-image-sizes: each image's size, drawn uniformly
  uint64_t seed = 0;
};

// "720x1280,256x256" (height x width, as vLLM's bucket config orders them). Throws gs::Error.
std::vector<ImageSize> parse_image_sizes(const std::string& text);

// A data:image/bmp URL of a height x width image of random pixels.
std::string random_bmp_data_url(int height, int width, uint64_t seed);

// Adds the images to every request; prompt_len is reset to 0 so the server's usage (which counts
// the image tokens) becomes the prompt length.
void add_random_images(std::vector<BenchRequest>& requests, const RandomMmOptions& o);

}  // namespace gs::bench
