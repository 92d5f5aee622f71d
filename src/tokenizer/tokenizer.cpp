// Tokenizer::load: picks the loader from what PATH is.
#include "tokenizer/tokenizer.h"

#include <filesystem>

#include "core/error.h"
#include "tokenizer/gguf_vocab.h"
#include "tokenizer/tokenizer_json.h"

namespace gs {

std::shared_ptr<const Tokenizer> Tokenizer::load(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  GS_CHECK(fs::exists(path, ec), "{}: no such file or directory", path);
  if (fs::is_directory(path, ec)) {
    const fs::path json = fs::path(path) / "tokenizer.json";
    GS_CHECK(fs::exists(json, ec), "{}: the model directory has no tokenizer.json", path);
    return load_tokenizer_json(json.string());
  }
  if (fs::path(path).extension() == ".gguf") return load_gguf_tokenizer(path);
  return load_tokenizer_json(path);
}

}  // namespace gs
