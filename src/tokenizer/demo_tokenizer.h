// The tokenizer of the built-in demo model: the same pipeline kinds as Gemma's tokenizer.json
// (Replace " " -> "▁", Split, BPE with byte fallback, Replace/ByteFallback/Fuse decoder) and
// Gemma-4's control tokens, over a small vocabulary whose merges are learned from a short English
// text at build time. The output is byte-for-byte the same on every run.
#pragma once
#include <string>

namespace gs {

// Ids of the demo vocabulary that are fixed (Gemma-4 order for the first four).
struct DemoTokenIds {
  static constexpr int kPad = 0;
  static constexpr int kEos = 1;
  static constexpr int kBos = 2;
  static constexpr int kUnk = 3;
};

// Writes DIR/tokenizer.json and DIR/tokenizer_config.json (DIR must exist); returns the
// vocabulary size. Throws gs::Error when the files cannot be written.
int write_demo_tokenizer(const std::string& dir);

}  // namespace gs
