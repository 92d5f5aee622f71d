// Loader for Hugging Face tokenizer.json (+ tokenizer_config.json): BPE model, added tokens,
// normalizer, pre-tokenizer, decoder, post-processor BOS.
#pragma once
#include <memory>
#include <string>
#include <string_view>

#include "tokenizer/bpe_tokenizer.h"

namespace gs {

// `json` is the tokenizer.json text, `config` the tokenizer_config.json text (empty: none);
// `source`/`config_source` name the files in messages. Throws gs::Error on anything malformed or
// unsupported.
TokenizerParts parse_tokenizer_json(std::string_view json, const std::string& source, std::string_view config = {},
                                    const std::string& config_source = "tokenizer_config.json");

// Loads PATH (a tokenizer.json) and the tokenizer_config.json next to it when there is one.
std::shared_ptr<const Tokenizer> load_tokenizer_json(const std::string& path);

}  // namespace gs
