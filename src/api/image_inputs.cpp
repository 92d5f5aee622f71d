#include "api/image_inputs.h"

#include <fmt/format.h>

#include "api/api_error.h"
#include "api/image_source.h"
#include "core/error.h"
#include "runner/prompt_images.h"
#include "vision/image_preprocess.h"

namespace gs::api {

std::vector<PreparedImagePtr> load_images(const OpenAIRequest& req, const MultimodalOptions& opts) {
  std::vector<PreparedImagePtr> out;
  if (req.images.empty()) return out;
  if (!opts.enabled) {
    throw invalid_request(fmt::format("{}: image input is off on this server; start it with --enable-multimodal to "
                                      "accept image_url parts", req.images.front().where), "messages");
  }
  if (int(req.images.size()) > opts.max_images_per_prompt) {
    throw invalid_request(fmt::format("messages: {} images in one request, over the limit of {} "
                                      "(--limit-mm-per-prompt image=N)", req.images.size(), opts.max_images_per_prompt),
                          "messages");
  }
  if (req.max_soft_tokens && !is_image_budget(*req.max_soft_tokens)) {
    throw invalid_request(fmt::format("mm_processor_kwargs.max_soft_tokens: must be one of 70, 140, 280, 560, 1120, "
                                      "got {}", *req.max_soft_tokens), "mm_processor_kwargs");
  }
  const int default_budget = req.max_soft_tokens.value_or(opts.default_budget);
  for (const ImagePart& part : req.images) {
    try {
      RgbImage rgb = decode_image(fetch_image_bytes(part.url, opts), opts.limits);
      out.push_back(std::make_shared<const PreparedImage>(prepare_image(rgb, part.budget.value_or(default_budget))));
    } catch (const ApiError&) {
      throw;
    } catch (const Error& e) {
      throw invalid_request(fmt::format("{}: {}", part.where, e.what()), "messages");
    } catch (const std::bad_alloc&) {
      throw invalid_request(fmt::format("{}: not enough memory to decode this image", part.where), "messages");
    }
  }
  return out;
}

ExpandedPrompt expand_image_placeholders(const std::vector<int>& ids, const std::vector<PreparedImagePtr>& images,
                                         const ImageTokenIds& t) {
  ExpandedPrompt e;
  size_t found = 0;
  for (int id : ids)
    if (id == t.placeholder) ++found;
  if (found != images.size()) {
    throw invalid_request(fmt::format("messages: the prompt holds {} image placeholder token(s) for {} image(s): the "
                                      "chat template must render each image part once, and text must not contain the "
                                      "placeholder itself", found, images.size()), "messages");
  }
  if (images.empty()) {
    e.ids = ids;
    return e;
  }
  PromptImages p = expand_image_placeholders(ids, ImagePromptTokens{t.placeholder, t.boi, t.eoi}, images);
  e.ids = std::move(p.tokens);
  e.mm_block = std::move(p.mm_block);
  return e;
}

}  // namespace gs::api
