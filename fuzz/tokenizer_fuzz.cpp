// libFuzzer target for the tokenizer. The first input byte picks what the rest is:
//   0: a tokenizer.json (loaded, then used to encode and decode a few strings),
//   1: a GGUF vocabulary (loaded, then used likewise),
//   other: text encoded with a small fixed tokenizer, checked against invariants: decode gives
//          the text back (valid UTF-8 without "▁"), streaming pieces add up to decode().
// Loading may fail only with gs::Error; anything else (crash, other exception, broken invariant)
// is a finding.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/gguf_vocab.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_json.h"
#include "tokenizer/utf8.h"

namespace {

// A byte-fallback BPE with Gemma's pipeline (all 256 byte tokens, so any text round-trips), an
// added special token and a normalized single-word one.
const char kFixedTokenizer[] = R"({
 "added_tokens": [
  {"id": 0, "content": "<pad>", "special": true, "normalized": false},
  {"id": 1, "content": "<eos>", "special": true, "normalized": false},
  {"id": 2, "content": "<bos>", "special": true, "normalized": false},
  {"id": 3, "content": "<unk>", "special": true, "normalized": false},
  {"id": 4, "content": "<turn>", "special": true, "normalized": false},
  {"id": 5, "content": "<x>", "special": false, "normalized": true, "single_word": true}
 ],
 "normalizer": {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"},
 "pre_tokenizer": {"type": "Split", "pattern": {"String": " "}, "behavior": "MergedWithPrevious", "invert": false},
 "post_processor": null,
 "decoder": {"type": "Sequence", "decoders": [
  {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "}, {"type": "ByteFallback"}, {"type": "Fuse"}]},
 "model": {"type": "BPE", "unk_token": "<unk>", "fuse_unk": true, "byte_fallback": true,
  "vocab": {"<pad>": 0, "<eos>": 1, "<bos>": 2, "<unk>": 3, "<turn>": 4, "<x>": 5, "a": 6, "b": 7, "\u2581": 8,
   "ab": 9, "\u2581a": 10, "\u2581ab": 11, "\n": 12, "\n\n": 13, "c": 14, "abc": 15, "\u00e9": 16},
  "merges": [["a", "b"], ["\u2581", "a"], ["\u2581", "ab"], ["\n", "\n"], ["ab", "c"]]}
})";

const gs::Tokenizer& fixed() {
  static const gs::BpeTokenizer tok = [] {
    nlohmann::json j = nlohmann::json::parse(kFixedTokenizer);
    for (int b = 0; b < 256; ++b) j["model"]["vocab"][fmt::format("<0x{:02X}>", b)] = 17 + b;
    return gs::BpeTokenizer(gs::parse_tokenizer_json(j.dump(), "fixed.json"));
  }();
  return tok;
}

void exercise(const gs::Tokenizer& tok) {
  for (const char* s : {"", "hello world", "<bos>a b\n\n", "\xE2\x82\xAC \xF0\x9F\x98\x80"}) {
    const auto ids = tok.encode(s, true);
    (void)tok.decode(ids, false);
    (void)tok.decode(ids, true);
  }
}

void check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  ++data;
  --size;
  try {
    if (mode == 0) {
      const gs::BpeTokenizer tok(gs::parse_tokenizer_json(
          std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.json"));
      exercise(tok);
      return 0;
    }
    if (mode == 1) {
      const gs::BpeTokenizer tok(gs::parse_gguf_vocab(data, size, "fuzz.gguf"));
      exercise(tok);
      return 0;
    }
  } catch (const gs::Error&) {
    return 0;  // rejected with a message: the expected outcome for bad input
  }

  const std::string text(reinterpret_cast<const char*>(data), size);
  const gs::Tokenizer& tok = fixed();
  const auto ids = tok.encode(text);
  for (int id : ids) check(id >= 0 && id < tok.vocab_size());
  const std::string decoded = tok.decode(ids);
  if (gs::utf8::is_valid(text) && text.find("\xE2\x96\x81") == std::string::npos) check(decoded == text);
  // Streaming: a shared_ptr that does not own the static tokenizer.
  std::shared_ptr<const gs::Tokenizer> shared(&tok, [](const gs::Tokenizer*) {});
  gs::IncrementalDetokenizer detok(shared, false);
  std::string streamed;
  for (int id : ids) {
    const std::string piece = detok.push(id);
    check(gs::utf8::is_valid(piece));
    streamed += piece;
  }
  streamed += detok.flush();
  check(streamed == decoded);
  return 0;
}
