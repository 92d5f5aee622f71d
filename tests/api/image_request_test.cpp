// Image parts on the request path: image_url parts through parsing, fetching (data: and file://
// URLs), decoding and preprocessing, the template's placeholder expanded into begin-of-image, soft
// tokens and end-of-image with their vision block ids; the expansion checked against
// transformers' Gemma4Processor over the demo tokenizer (fixtures/image_golden/expansion.json);
// and every refusal a 400 naming the part.
#include <gtest/gtest.h>

#include <climits>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "api/api_error.h"
#include "api/fake_tokenizer.h"
#include "api/image_source.h"
#include "api/openai_request.h"
#include "api/request_preparer.h"
#include "core/read_file.h"
#include "tokenizer/demo_tokenizer.h"
#include "vision/image_preprocess.h"

namespace gs::api {
namespace {

using json = RequestJson;
const std::string kDir = std::string(GS_SOURCE_DIR) + "/fixtures/image_golden";

std::string base64(const std::string& bytes) {
  static const char* a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t v = uint32_t(uint8_t(bytes[i])) << 16;
    if (i + 1 < bytes.size()) v |= uint32_t(uint8_t(bytes[i + 1])) << 8;
    if (i + 2 < bytes.size()) v |= uint8_t(bytes[i + 2]);
    out += a[v >> 18 & 63];
    out += a[v >> 12 & 63];
    out += i + 1 < bytes.size() ? a[v >> 6 & 63] : '=';
    out += i + 2 < bytes.size() ? a[v & 63] : '=';
  }
  return out;
}

std::string data_url(const std::string& file) { return "data:image/png;base64," + base64(read_file(kDir + "/" + file)); }

json image_part(const std::string& url, const char* detail = nullptr) {
  json p = {{"type", "image_url"}, {"image_url", {{"url", url}}}};
  if (detail) p["image_url"]["detail"] = detail;
  return p;
}

// Renders text parts and one <|image|> per image part, as Gemma's templates do.
const char* kTemplate =
    "{% for m in messages %}{% if m.content is string %}{{ m.content }}{% else %}{% for p in m.content %}"
    "{% if p.type == 'text' %}{{ p.text }}{% elif p.type == 'image' %}<|image|>{% endif %}{% endfor %}{% endif %}"
    "{% endfor %}";

class ImageRequestTest : public ::testing::Test {
 protected:
  std::shared_ptr<ServingModel> model = std::make_shared<ServingModel>(
      "demo", std::make_shared<gs::testing::FakeTokenizer>(), std::make_shared<ChatTemplate>(kTemplate),
      GenerationConfig{});
  void SetUp() override {
    model->multimodal.enabled = true;
    model->multimodal.allowed_local_media_path = kDir;
  }
  PreparedRequest prepare(const json& content, json extra = json::object()) {
    json body = {{"messages", {{{"role", "user"}, {"content", content}}}}};
    body.update(extra);
    return prepare_request(parse_chat_request(body), *model, RequestLimits{INT32_MAX, 1 << 20, 1 << 20});
  }
  std::string error(const json& content, json extra = json::object()) {
    try {
      prepare(content, extra);
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status(), 400);
      return e.what();
    }
    ADD_FAILURE() << "no error for " << content.dump().substr(0, 200);
    return "";
  }
};

TEST_F(ImageRequestTest, ExpandsEachImageIntoBeginSoftTokensEnd) {
  const ImageTokenIds t = model->image_tokens;
  ASSERT_TRUE(t.complete());
  PreparedRequest p = prepare(json::array({{{"type", "text"}, {"text", "A"}}, image_part(data_url("tiny.png")),
                                           {{"type", "text"}, {"text", "B"}},
                                           image_part("file://" + kDir + "/wide81.png", "low")}));
  ASSERT_EQ(p.choices.size(), 1u);
  const GenerationRequest& r = p.choices[0].request;
  ASSERT_EQ(r.images.size(), 2u);
  EXPECT_EQ(r.images[0]->budget, 280);  // the server default
  EXPECT_EQ(r.images[0]->soft_tokens, 260);
  EXPECT_EQ(r.images[1]->budget, 70);   // detail "low"
  EXPECT_EQ(r.images[1]->soft_tokens, 46);
  // A, boi, 260 x image, eoi, B, boi, 46 x image, eoi
  ASSERT_EQ(r.prompt.size(), 1u + 1 + 260 + 1 + 1 + 1 + 46 + 1);
  ASSERT_EQ(r.mm_block.size(), r.prompt.size());
  EXPECT_EQ(r.prompt[1], t.boi);
  EXPECT_EQ(r.mm_block[1], -1);
  for (int i = 2; i < 262; ++i) {
    ASSERT_EQ(r.prompt[i], t.placeholder);
    ASSERT_EQ(r.mm_block[i], 0);
  }
  EXPECT_EQ(r.prompt[262], t.eoi);
  EXPECT_EQ(r.mm_block[262], -1);
  EXPECT_EQ(r.mm_block[265], 1);
  EXPECT_EQ(r.mm_block.back(), -1);
  EXPECT_EQ(r.prompt.back(), t.eoi);
}

TEST_F(ImageRequestTest, BudgetsFromDetailAndProcessorKwargs) {
  auto budget = [&](const char* detail, json extra) {
    return prepare(json::array({image_part(data_url("tiny.png"), detail)}), extra).choices[0].request.images[0]->budget;
  };
  EXPECT_EQ(budget(nullptr, json::object()), 280);
  EXPECT_EQ(budget("auto", json::object()), 280);
  EXPECT_EQ(budget("high", json::object()), 1120);
  EXPECT_EQ(budget(nullptr, {{"mm_processor_kwargs", {{"max_soft_tokens", 140}}}}), 140);
  EXPECT_EQ(budget("low", {{"mm_processor_kwargs", {{"max_soft_tokens", 560}}}}), 70);  // per image wins
  model->multimodal.default_budget = 560;
  EXPECT_EQ(budget(nullptr, json::object()), 560);
}

TEST_F(ImageRequestTest, RefusalsNameThePart) {
  const json text = {{"type", "text"}, {"text", "hi"}};
  auto with = [&](json part) { return json::array({text, part}); };
  EXPECT_NE(error(with(image_part("data:image/png;base64,aGVsbG8gd29ybGQ="))).find(
                "messages[0].content[1]: unsupported image format"), std::string::npos);
  std::string png = read_file(kDir + "/square.png");
  EXPECT_NE(error(with(image_part("data:image/png;base64," + base64(png.substr(0, png.size() / 2))))).find(
                "messages[0].content[1]: corrupt or truncated PNG"), std::string::npos);
  EXPECT_NE(error(with(image_part("data:text/plain;base64,aGk="))).find("not an image type"), std::string::npos);
  EXPECT_NE(error(with(image_part("data:image/png;base64,@@@"))).find("not valid base64"), std::string::npos);
  EXPECT_NE(error(with(image_part("file:///etc/passwd"))).find("outside --allowed-local-media-path"), std::string::npos);
  EXPECT_NE(error(with(image_part("file://" + kDir + "/../image_golden/../../README.md"))).find("outside"),
            std::string::npos);
  EXPECT_NE(error(with(image_part("http://example.com/cat.png"))).find("--allowed-media-domains"), std::string::npos);
  EXPECT_NE(error(with(image_part("https://example.com/cat.png"))).find("https://"), std::string::npos);
  EXPECT_NE(error(with(image_part("ftp://x/y.png"))).find("data:, file:// or http(s)://"), std::string::npos);
  EXPECT_NE(error(with(image_part(data_url("tiny.png"), "medium"))).find("messages[0].content[1].image_url.detail"),
            std::string::npos);
  EXPECT_NE(error(with({{"type", "image_url"}, {"image_url", "http://x"}})).find("must be an object"), std::string::npos);
  EXPECT_NE(error(with({{"type", "image_url"}})).find("image_url: required"), std::string::npos);
  EXPECT_NE(error(with({{"type", "input_audio"}})).find("not supported"), std::string::npos);
  EXPECT_NE(error(with(image_part(data_url("tiny.png"))), {{"mm_processor_kwargs", {{"max_soft_tokens", 100}}}})
                .find("mm_processor_kwargs.max_soft_tokens"), std::string::npos);
  EXPECT_NE(error(with(image_part(data_url("tiny.png"))), {{"mm_processor_kwargs", {{"do_resize", false}}}})
                .find("mm_processor_kwargs.do_resize"), std::string::npos);
  model->multimodal.limits.max_pixels = 100;
  EXPECT_NE(error(with(image_part(data_url("tiny.png")))).find(
                "messages[0].content[1]: image of 30x20 pixels exceeds --max-image-pixels 100"), std::string::npos);
  model->multimodal.limits = {};
  model->multimodal.limits.max_bytes = 100;
  EXPECT_NE(error(with(image_part(data_url("square.png")))).find("over --max-image-bytes 100"), std::string::npos);
}

TEST_F(ImageRequestTest, OffUnlessEnabledAndLimitedPerPrompt) {
  model->multimodal.enabled = false;
  std::string msg = error(json::array({image_part(data_url("tiny.png"))}));
  EXPECT_NE(msg.find("messages[0].content[0]: image input is off"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--enable-multimodal"), std::string::npos) << msg;
  model->multimodal.enabled = true;
  model->multimodal.max_images_per_prompt = 1;
  msg = error(json::array({image_part(data_url("tiny.png")), image_part(data_url("tiny.png"))}));
  EXPECT_NE(msg.find("2 images in one request, over the limit of 1"), std::string::npos) << msg;
}

TEST_F(ImageRequestTest, PlaceholderCountMustMatchTheImages) {
  // Text that spells the placeholder itself adds one the template did not render for an image.
  std::string msg = error(json::array({{{"type", "text"}, {"text", "<|image|>"}}, image_part(data_url("tiny.png"))}));
  EXPECT_NE(msg.find("2 image placeholder token(s) for 1 image(s)"), std::string::npos) << msg;
}

TEST_F(ImageRequestTest, TextOnlyContentIsStillOneString) {
  json body = {{"messages", {{{"role", "user"}, {"content", json::array({{{"type", "text"}, {"text", "a"}},
                                                                          {{"type", "text"}, {"text", "b"}}})}}}}};
  OpenAIRequest r = parse_chat_request(body);
  EXPECT_EQ(r.messages[0]["content"], "a\nb");
  EXPECT_TRUE(r.images.empty());
  PreparedRequest p = prepare("plain");
  EXPECT_TRUE(p.choices[0].request.mm_block.empty());
  EXPECT_TRUE(p.choices[0].request.images.empty());
}

TEST(ImageExpansion, MatchesTheReferenceProcessorOverTheDemoTokenizer) {
  // fixtures/image_golden/expansion.json: Gemma4Processor(text, images, max_soft_tokens=70) over
  // the demo tokenizer.json, and the ids of the unexpanded text.
  const json e = json::parse(read_file(kDir + "/expansion.json"));
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("gs_image_tok_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  write_demo_tokenizer(dir.string());
  auto tok = Tokenizer::load(dir.string());
  std::filesystem::remove_all(dir);
  const ImageTokenIds t = ImageTokenIds::from(*tok);
  ASSERT_TRUE(t.complete());
  std::vector<int> ids = tok->encode(e["text"].get<std::string>(), false);
  EXPECT_EQ(ids, e["unexpanded_ids"].get<std::vector<int>>());
  std::vector<PreparedImagePtr> images;
  for (const auto& f : e["images"]) {
    images.push_back(std::make_shared<const PreparedImage>(
        prepare_image(decode_image(read_file(kDir + "/" + f.get<std::string>())), e["budget"].get<int>())));
  }
  ExpandedPrompt x = expand_image_placeholders(ids, images, t);
  EXPECT_EQ(x.ids, e["ids"].get<std::vector<int>>());
}

TEST(ImageSource, Base64) {
  EXPECT_EQ(decode_base64("aGVsbG8="), "hello");
  EXPECT_EQ(decode_base64("aGVsbG8"), "hello");
  EXPECT_EQ(decode_base64(""), "");
  EXPECT_FALSE(decode_base64("aGVsb G8="));
  EXPECT_FALSE(decode_base64("a"));
}

}  // namespace
}  // namespace gs::api
