#include "cli/multimodal_flags.h"

#include <filesystem>

#include "core/error.h"

namespace gs::cli {

void add_multimodal_options(CLI::App& app, MultimodalFlags& f) {
  app.add_flag("--enable-multimodal", f.enable,
               "Accept images (OpenAI image_url content parts) and load the model's vision tower; without it every "
               "image part is refused with a 400");
  app.add_option("--limit-mm-per-prompt", f.limit_mm_per_prompt,
                 "Most images in one request, as image=N or '{\"image\": N}' (default: image=8)");
  app.add_option("--mm-processor-kwargs", f.mm_processor_kwargs,
                 "Image processor defaults as JSON: '{\"max_soft_tokens\": N}' with N in 70, 140, 280, 560, 1120 "
                 "(default 280): the soft tokens an image may take. Requests override it per image with "
                 "image_url.detail (low: 70, high: 1120) or for all their images with "
                 "mm_processor_kwargs.max_soft_tokens");
  app.add_option("--max-image-bytes", f.max_image_bytes,
                 "Largest encoded image (data: URL payload, file or download), in bytes; the request body cap "
                 "(--max-body-bytes) also bounds data: URLs")
      ->capture_default_str();
  app.add_option("--max-image-pixels", f.max_image_pixels,
                 "Largest image in width x height pixels, checked from the file header before decoding")
      ->capture_default_str();
  app.add_option("--allowed-local-media-path", f.allowed_local_media_path,
                 "Directory under which file:// image URLs may be read (default: none, file:// URLs are refused)");
  app.add_option("--allowed-media-domains", f.allowed_media_domains,
                 "Hosts that http:// image URLs may name (default: none, the server fetches nothing); https:// is "
                 "not supported by this build");
  app.add_option("--media-fetch-timeout", f.media_fetch_timeout,
                 "Seconds to connect to, and then to wait on, an allowed media host")
      ->capture_default_str();
}

api::MultimodalOptions resolve_multimodal(const MultimodalFlags& f) {
  api::MultimodalOptions o;
  o.enabled = f.enable;
  if (!f.limit_mm_per_prompt.empty()) o.max_images_per_prompt = api::parse_limit_mm_per_prompt(f.limit_mm_per_prompt);
  if (!f.mm_processor_kwargs.empty()) o.default_budget = api::parse_mm_processor_kwargs(f.mm_processor_kwargs);
  GS_CHECK(f.max_image_bytes > 0, "--max-image-bytes must be positive");
  GS_CHECK(f.max_image_pixels > 0, "--max-image-pixels must be positive");
  GS_CHECK(f.media_fetch_timeout > 0, "--media-fetch-timeout must be positive");
  o.limits.max_bytes = f.max_image_bytes;
  o.limits.max_pixels = f.max_image_pixels;
  o.fetch_timeout_s = f.media_fetch_timeout;
  if (!f.allowed_local_media_path.empty()) {
    GS_CHECK(std::filesystem::is_directory(f.allowed_local_media_path),
             "--allowed-local-media-path {}: not a directory", f.allowed_local_media_path);
    o.allowed_local_media_path = f.allowed_local_media_path;
  }
  for (std::string d : f.allowed_media_domains) {
    for (char& c : d) c = char(std::tolower(uint8_t(c)));
    GS_CHECK(!d.empty() && d.find('/') == std::string::npos && d.find(':') == std::string::npos,
             "--allowed-media-domains {}: expected a host name, without scheme, port or path", d);
    o.allowed_media_domains.push_back(d);
  }
  return o;
}

}  // namespace gs::cli
