// Builds a tokenizer from the vocabulary stored in a GGUF file's metadata (tokenizer.ggml.*).
// Supported: model "gemma4" (Gemma-4's BPE with byte fallback over "▁"-escaped text, newline runs
// split off first), which encodes exactly as the Hugging Face Gemma-4 tokenizer.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "tokenizer/bpe_tokenizer.h"

namespace gs {

TokenizerParts parse_gguf_vocab(const uint8_t* data, size_t size, const std::string& source);
std::shared_ptr<const Tokenizer> load_gguf_tokenizer(const std::string& path);

}  // namespace gs
