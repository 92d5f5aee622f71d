#include "api/multimodal_options.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "vision/image_preprocess.h"

namespace gs::api {

ImageTokenIds ImageTokenIds::from(const Tokenizer& tok) {
  ImageTokenIds t;
  t.placeholder = tok.token_id("<|image|>").value_or(-1);
  t.boi = tok.token_id("<|image>").value_or(-1);
  t.eoi = tok.token_id("<image|>").value_or(-1);
  return t;
}

namespace {

int image_count(const std::string& modality, int64_t n, const std::string& text) {
  if (modality != "image") {
    throw Error("--limit-mm-per-prompt {}: only images are accepted as input (got a limit for \"{}\")", text,
                modality);
  }
  if (n < 0 || n > 1024) throw Error("--limit-mm-per-prompt {}: the image limit must be in [0, 1024]", text);
  return int(n);
}

}  // namespace

int parse_limit_mm_per_prompt(const std::string& text) {
  if (!text.empty() && text.front() == '{') {
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception&) {
      throw Error("--limit-mm-per-prompt {}: not valid JSON", text);
    }
    int n = -1;
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (!it.value().is_number_integer()) {
        throw Error("--limit-mm-per-prompt {}: \"{}\" must be an integer", text, it.key());
      }
      n = image_count(it.key(), it.value().get<int64_t>(), text);
    }
    if (n < 0) throw Error("--limit-mm-per-prompt {}: no image limit given", text);
    return n;
  }
  auto eq = text.find('=');
  if (eq == std::string::npos) throw Error("--limit-mm-per-prompt {}: expected image=N or {{\"image\": N}}", text);
  const std::string value = text.substr(eq + 1);
  size_t used = 0;
  int64_t n = -1;
  try {
    n = std::stoll(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != value.size()) throw Error("--limit-mm-per-prompt {}: \"{}\" is not an integer", text, value);
  return image_count(text.substr(0, eq), n, text);
}

int parse_mm_processor_kwargs(const std::string& json_text) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::exception&) {
    throw Error("--mm-processor-kwargs {}: not valid JSON", json_text);
  }
  GS_CHECK(j.is_object(), "--mm-processor-kwargs {}: must be a JSON object", json_text);
  int budget = 280;
  for (auto it = j.begin(); it != j.end(); ++it) {
    GS_CHECK(it.key() == "max_soft_tokens", "--mm-processor-kwargs: unknown argument \"{}\" (the Gemma-4 image "
             "processor takes max_soft_tokens)", it.key());
    GS_CHECK(it.value().is_number_integer() && is_image_budget(it.value().get<int>()),
             "--mm-processor-kwargs: max_soft_tokens must be one of 70, 140, 280, 560, 1120, got {}",
             it.value().dump());
    budget = it.value().get<int>();
  }
  return budget;
}

}  // namespace gs::api
