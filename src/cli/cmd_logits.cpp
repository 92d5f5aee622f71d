// gemmaserve logits: the logits of a token sequence, for parity checks against the reference.
// Reads int32 ids [T] from a .npy file, writes float32 logits [T, vocab] (after the final
// soft-cap), computed in one of three ways: one prefill forward, token-by-token decode, or chunks.
// With images, each image token id of the file stands for one image (in order) and is expanded as
// the processor does (begin-of-image, its soft tokens, end-of-image); the logits are the expanded
// prompt's.
#include <chrono>
#include <memory>

#include "core/read_file.h"
#include "vision/image_decode.h"
#include "vision/image_preprocess.h"
#include "cli/command.h"
#include "cli/kernel_policy_option.h"
#include "core/error.h"
#include "core/log.h"
#include "core/npy.h"
#include "kernels/backends.h"
#include "model/gemma4_model.h"
#include "model/model_source.h"
#include "runner/image_pixels_file.h"
#include "runner/prompt_images.h"
#include "runner/sequence_runner.h"
#include "runner/tensor_parallel_model.h"

namespace gs::cli {
namespace {

struct LogitsOptions {
  std::string model, tokens, out;
  std::string backend = "cpu";
  std::string kernel_policy;  // --kernel-policy items
  std::string mode = "prefill";
  int chunk = 0;
  int page_size = 16;
  std::string load_format = "auto";
  std::vector<std::string> images;        // --image: encoded files
  std::vector<std::string> image_pixels;  // --image-pixels: preprocessed pixels (.npy + .json)
  std::string mm_overlay;                 // --mm-overlay: "" keeps the config's
  int tensor_parallel_size = 1;
  bool disable_custom_all_reduce = false;
};

// An encoded image file made ready for the tower: the request path's decoder and preprocessing, at
// the default budget of the model's tower (280 soft tokens unless the config says otherwise).
PreparedImagePtr prepare_image_file(const std::string& path, const ModelConfig& cfg) {
  try {
    const int budget = cfg.vision.default_output_length > 0 ? cfg.vision.default_output_length : 280;
    return std::make_shared<const PreparedImage>(prepare_image(decode_image(read_file(path)), budget));
  } catch (const Error& e) {
    throw Error("--image {}: {}", path, e.what());
  }
}

// The same computation split over N ranks (runner/tensor_parallel_model.h); rank 0's logits.
int run_tensor_parallel(const LogitsOptions& o, const ModelSpec& spec, const std::vector<int>& tokens,
                        const SequenceRunOptions& opt) {
  GpuCollectiveOptions collectives;
  collectives.custom_all_reduce = !o.disable_custom_all_reduce;
  TensorParallelModel tp(spec, o.backend, o.tensor_parallel_size, backend_options(o.kernel_policy), collectives);
  const ModelConfig& cfg = tp.config();
  for (size_t i = 0; i < tokens.size(); ++i)
    GS_CHECK(tokens[i] >= 0 && tokens[i] < cfg.vocab_size, "{}: token id {} at index {} is outside the vocabulary [0, {})",
             o.tokens, tokens[i], i, cfg.vocab_size);
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<float> logits = sequence_logits(tp, tokens, opt);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  write_npy(o.out, DType::F32, {int64_t(tokens.size()), int64_t(cfg.vocab_size)}, logits.data());
  log::info("logits: {} tokens ({} mode) on {} in {:.3f} s -> {}", tokens.size(), o.mode, tp.describe(), secs, o.out);
  return 0;
}

int run(const LogitsOptions& o) {
  const LogitsMode mode = parse_logits_mode(o.mode);
  GS_CHECK(mode != LogitsMode::Chunked || o.chunk > 0, "--mode chunked needs --chunk N with N > 0");
  const ModelSpec spec{o.model, parse_load_format(o.load_format)};
  std::vector<int> tokens = npy_token_ids(read_npy(o.tokens), o.tokens);
  GS_CHECK(!tokens.empty(), "{}: no token ids", o.tokens);
  GS_CHECK(o.images.empty() || o.image_pixels.empty(), "--image and --image-pixels cannot be mixed");
  const bool with_images = !o.images.empty() || !o.image_pixels.empty();
  GS_CHECK(o.tensor_parallel_size == 1 || !with_images, "--image with --tensor-parallel-size is not supported yet");
  GS_CHECK(o.tensor_parallel_size >= 1, "--tensor-parallel-size must be at least 1 (got {})", o.tensor_parallel_size);
  SequenceRunOptions opt;
  opt.mode = mode;
  opt.chunk = o.chunk;
  opt.page_size = o.page_size;
  if (o.tensor_parallel_size > 1) return run_tensor_parallel(o, spec, tokens, opt);

  std::unique_ptr<Backend> backend = create_backend(o.backend, backend_options(o.kernel_policy));
  ModelSpec mspec = spec;
  mspec.enable_multimodal = with_images;
  LoadedModel loaded = load_model(mspec, *backend);
  if (!o.mm_overlay.empty()) loaded.config.mm_overlay = parse_mm_overlay(o.mm_overlay);
  const ModelConfig& cfg = loaded.config;
  PromptImages prompt_images;
  if (with_images) {
    std::vector<PreparedImagePtr> images;
    for (const std::string& f : o.images) images.push_back(prepare_image_file(f, cfg));
    for (const std::string& f : o.image_pixels) images.push_back(read_image_pixels(f));
    prompt_images = expand_image_placeholders(tokens, cfg, std::move(images));
    tokens = prompt_images.tokens;
  }
  for (size_t i = 0; i < tokens.size(); ++i)
    GS_CHECK(tokens[i] >= 0 && tokens[i] < cfg.vocab_size, "{}: token id {} at index {} is outside the vocabulary [0, {})",
             o.tokens, tokens[i], i, cfg.vocab_size);
  Gemma4Model model(cfg, std::move(loaded.weights), *backend);
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<float> logits = sequence_logits(model, tokens, opt, with_images ? &prompt_images : nullptr);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  write_npy(o.out, DType::F32, {int64_t(tokens.size()), int64_t(cfg.vocab_size)}, logits.data());
  log::info("logits: {} tokens{} ({} mode) on {} in {:.3f} s -> {}", tokens.size(),
            with_images ? fmt::format(" with {} images", prompt_images.images.size()) : std::string(), o.mode,
            backend->name(), secs, o.out);
  return 0;
}

GS_REGISTER_COMMAND(logits, "logits", "Compute the logits of a token sequence (.npy in, .npy out)",
                    [](CLI::App& app) -> std::function<int()> {
                      auto o = std::make_shared<LogitsOptions>();
                      app.add_option("--model", o->model, "Model directory (or, with --load-format dummy, a preset)")
                          ->required();
                      app.add_option("--tokens", o->tokens, "int32 token ids, shape [T] (.npy)")->required();
                      app.add_option("--out", o->out, "float32 logits, shape [T, vocab] (.npy)")->required();
                      app.add_option("--backend", o->backend, "cpu, cuda or cuda:N")->capture_default_str();
                      add_kernel_policy_option(app, o->kernel_policy);
                      app.add_option("--mode", o->mode, "prefill | decode | chunked")->capture_default_str();
                      app.add_option("--chunk", o->chunk, "tokens per forward in chunked mode");
                      app.add_option("--page-size", o->page_size, "KV cache page size in tokens")
                          ->capture_default_str();
                      app.add_option("--load-format", o->load_format, "auto (read the checkpoint) | dummy (random)")
                          ->capture_default_str();
                      app.add_option("--image", o->images,
                                     "An image file for the next image token of --tokens (repeatable, in order); "
                                     "loads the vision tower");
                      app.add_option("--image-pixels", o->image_pixels,
                                     "Preprocessed pixels instead of --image: FILE.npy ([patches, 768], float32 in "
                                     "[0, 1] or uint8) with FILE.json ({\"height\", \"width\"} resized pixels)");
                      app.add_option("--mm-overlay", o->mm_overlay,
                                     "Which layers let an image's soft tokens see each other: sliding-in-window "
                                     "(transformers 5.17, the default for use_bidirectional_attention=vision), "
                                     "sliding, all, none");
                      app.add_option("--tensor-parallel-size,--tp", o->tensor_parallel_size,
                                     "Split the model over N ranks, one thread each (cpu: N cpu backends; cuda: "
                                     "cuda:0..N-1 over NCCL); the logits are rank 0's gathered rows")
                          ->capture_default_str();
                      app.add_flag("--disable-custom-all-reduce", o->disable_custom_all_reduce,
                                   "With --tensor-parallel-size > 1: every all-reduce through NCCL (vLLM's flag), "
                                   "instead of the peer-memory one-shot all-reduce for small messages");
                      return [o] { return run(*o); };
                    });

}  // namespace
}  // namespace gs::cli
