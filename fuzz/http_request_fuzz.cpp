// Fuzzes the request path of the server below HTTP: a raw body is parsed as JSON, validated as a
// /v1/chat/completions or /v1/completions request, rendered with the demo chat template,
// tokenized and checked against the model length; then its prompt ids are fed back as if
// generated, through the output decoder with the request's own stop strings. Every input must end
// in a prepared request or an ApiError (a clean 4xx), never a crash or another exception type.
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <unistd.h>
#include <string>

#include "api/api_error.h"
#include "api/choice_decoder.h"
#include "api/openai_request.h"
#include "api/request_preparer.h"
#include "api/serving_model.h"
#include "chat/demo_template.h"
#include "tokenizer/demo_tokenizer.h"

namespace {

const gs::api::ServingModel& model() {
  static std::shared_ptr<gs::api::ServingModel> m = [] {
    std::string dir = (std::filesystem::temp_directory_path() / ("gs_fuzz_http_" + std::to_string(getpid()))).string();
    std::filesystem::create_directories(dir);
    gs::write_demo_tokenizer(dir);
    auto tok = gs::Tokenizer::load(dir);
    std::filesystem::remove_all(dir);
    gs::GenerationConfig gen;
    gen.eos_token_ids = {1};
    return std::make_shared<gs::api::ServingModel>("demo", tok, std::make_shared<gs::ChatTemplate>(gs::demo_chat_template()),
                                                   gen);
  }();
  return *m;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const gs::api::ServingModel& m = model();
  // The first byte picks the endpoint; the rest is the body.
  bool chat = data[0] & 1;
  std::string body(reinterpret_cast<const char*>(data + 1), size - 1);
  try {
    nlohmann::json j = gs::api::parse_json_body(body);
    gs::api::OpenAIRequest req = chat ? gs::api::parse_chat_request(j) : gs::api::parse_completion_request(j);
    gs::api::PreparedRequest p = gs::api::prepare_request(std::move(req), m, {m.tokenizer->vocab_size(), 512, 512});
    if (p.choices.empty()) abort();
    gs::api::ChoiceDecoder::Options opt;
    opt.chat = chat;
    opt.parse_tool_calls = chat;
    opt.stop = p.api.stop;
    gs::api::ChoiceDecoder dec(m.tokenizer, m.markers, opt);
    for (int id : p.prompt_ids[0]) {
      if (dec.push(id).stopped) break;
    }
    dec.finish();
  } catch (const gs::api::ApiError& e) {
    if (e.status() < 400 || e.status() >= 500) abort();  // input problems are the client's: 4xx
  }
  return 0;
}
