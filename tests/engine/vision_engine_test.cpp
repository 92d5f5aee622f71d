// Requests with images through the whole engine (scheduler, runner, tower, overlay) on the cpu
// backend give transformers' greedy tokens (fixtures/vision_golden): alone, batched with another
// image request, and with a step budget that forces each image into its own chunk.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <map>

#include "checkpoint/checkpoint.h"
#include "core/npy.h"
#include "engine/engine.h"
#include "engine_results.h"
#include "kernels/cpu/cpu_backend.h"
#include "model/weight_loader.h"
#include "runner/image_pixels_file.h"
#include "runner/prompt_images.h"

namespace gs {
namespace {

std::string vg_dir() { return std::string(GS_SOURCE_DIR) + "/fixtures/vision_golden"; }

struct Fixture {
  std::unique_ptr<Backend> backend;
  std::shared_ptr<Gemma4Model> model;
};

Fixture load(const std::string& kind) {
  Fixture f;
  f.backend = make_cpu_backend(2);
  auto ckpt = Checkpoint::open(vg_dir() + "/" + kind, CheckpointOptions{true});
  ModelConfig cfg = ModelConfig::from_json(ckpt->config_json());
  f.model = std::make_shared<Gemma4Model>(cfg, load_weights(*ckpt, cfg, *f.backend), *f.backend);
  return f;
}

struct ImageRequest {
  GenerationRequest req;
  std::vector<int> want;
};

ImageRequest image_request(const Gemma4Model& model, const std::string& kind, const std::string& prompt) {
  const std::string dir = vg_dir() + "/" + kind;
  std::ifstream mf(dir + "/meta.json"), gf(dir + "/greedy_" + prompt + ".json");
  const nlohmann::json meta = nlohmann::json::parse(mf), greedy = nlohmann::json::parse(gf);
  std::vector<PreparedImagePtr> ims;
  for (const auto& n : meta.at("prompts").at(prompt).at("images"))
    ims.push_back(read_image_pixels(vg_dir() + "/images/" + n.get<std::string>() + ".npy"));
  PromptImages p = expand_image_placeholders(npy_token_ids(read_npy(dir + "/prompt_" + prompt + ".npy"), prompt),
                                             model.config(), std::move(ims));
  ImageRequest r;
  r.want = greedy.at("generated").get<std::vector<int>>();
  r.req.id = kind + "-" + prompt;
  r.req.prompt = p.tokens;
  r.req.mm_block = p.mm_block;
  r.req.images = p.images;
  r.req.sampling.temperature = 0;
  r.req.sampling.max_tokens = int(r.want.size());
  r.req.sampling.ignore_eos = true;
  return r;
}

EngineOptions options(int step_tokens) {
  EngineOptions o;
  o.max_num_seqs = 4;
  o.max_num_batched_tokens = step_tokens;
  o.max_model_len = 512;
  o.page_size = 8;
  o.kv_cache_memory_bytes = 16 << 20;
  o.debug_page_checks = true;
  o.enable_multimodal = true;
  return o;
}

void run_and_check(const Fixture& f, EngineOptions o, std::vector<ImageRequest> reqs) {
  Engine engine(f.model, o);
  engine.start();
  for (auto& r : reqs) {
    auto res = engine.submit(r.req);
    ASSERT_TRUE(res.ok) << res.error;
  }
  for (auto& r : reqs) EXPECT_EQ(drain(*r.req.output).tokens, r.want) << r.req.id;
}

TEST(VisionEngine, OneImageRequestGivesTheReferenceTokens) {
  Fixture f = load("vision_std");
  run_and_check(f, options(256), {image_request(*f.model, "vision_std", "p1")});
}

TEST(VisionEngine, TwoImageRequestsBatchedGiveTheReferenceTokens) {
  Fixture f = load("vision_std");
  run_and_check(f, options(512), {image_request(*f.model, "vision_std", "p1"),
                                  image_request(*f.model, "vision_std", "p3")});
}

TEST(VisionEngine, SmallStepBudgetPutsEachImageInItsOwnChunk) {
  Fixture f = load("vision_clipped");
  // 70 tokens a step: every image (60-65 soft tokens) fits, but never with much text around it.
  run_and_check(f, options(70), {image_request(*f.model, "vision_clipped", "p3")});
}

}  // namespace
}  // namespace gs
