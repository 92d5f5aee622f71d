// Reads tokenizer.json in one streaming pass. The two huge parts (model.vocab: ~260k entries,
// model.merges: ~500k pairs for Gemma) go straight into flat vectors; everything else becomes an
// ordinary JSON tree (with model.vocab and model.merges left null in it). This is several times
// faster than building the whole document tree.
#pragma once
#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gs {

struct TokenizerJsonDoc {
  nlohmann::json root;
  bool has_vocab = false;
  bool has_merges = false;
  std::vector<std::pair<std::string, long long>> vocab;      // token, id (in file order)
  std::vector<std::pair<std::string, std::string>> merges;  // left, right (in rank order)
};

// Throws gs::Error naming `source` for invalid JSON or malformed vocab/merges entries.
TokenizerJsonDoc read_tokenizer_json(std::string_view text, const std::string& source);

}  // namespace gs
