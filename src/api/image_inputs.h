// The images of a chat request, from their URLs to the engine's view: fetched, decoded and
// preprocessed on the request's own (HTTP) thread, and the prompt's placeholders expanded into
// begin-of-image, one placeholder id per soft token, end-of-image (architecture notes 4.3), with
// the soft tokens' vision block ids (GenerationRequest::mm_block: image k is block k).
#pragma once
#include <vector>

#include "api/multimodal_options.h"
#include "api/openai_request.h"
#include "vision/prepared_image.h"

namespace gs::api {

// ApiError 400 when images are off (--enable-multimodal), too many, or one cannot be fetched,
// decoded or resized; the message names the part ("messages[1].content[2]: truncated PNG image").
std::vector<PreparedImagePtr> load_images(const OpenAIRequest& req, const MultimodalOptions& opts);

struct ExpandedPrompt {
  std::vector<int> ids;
  std::vector<int> mm_block;  // per id: the image's index over its soft tokens, -1 elsewhere
};
// Expands the k-th placeholder id into images[k]'s tokens. ApiError 400 when the rendered prompt
// holds another number of placeholders than there are images (a template that does not render
// images, or a placeholder typed in the text).
ExpandedPrompt expand_image_placeholders(const std::vector<int>& ids, const std::vector<PreparedImagePtr>& images,
                                         const ImageTokenIds& tokens);

}  // namespace gs::api
