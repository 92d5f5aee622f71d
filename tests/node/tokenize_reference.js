#!/usr/bin/env node
// Reference token ids from the Hugging Face `tokenizers` library (native Rust bindings), for
// tests/tokenizer: the C++ tokenizer must give exactly these ids.
//
// Usage: node tokenize_reference.js TOKENIZER_JSON STRINGS_JSON OUT_JSON
//   STRINGS_JSON: a JSON array of strings.
//   OUT_JSON: {"ids": [[...], ...], "decoded": ["...", ...]} where ids are encoded without
//   special tokens (no BOS) and decoded is decode(ids, skipSpecialTokens=false).
'use strict';
const fs = require('fs');

let Tokenizer;
try {
  ({ Tokenizer } = require('tokenizers'));
} catch (e) {
  console.error('tokenize_reference.js: the `tokenizers` package is missing; run `npm ci` in tests/node');
  process.exit(3);
}

async function main() {
  const [tokPath, inPath, outPath] = process.argv.slice(2);
  if (!tokPath || !inPath || !outPath) {
    console.error('usage: node tokenize_reference.js TOKENIZER_JSON STRINGS_JSON OUT_JSON');
    process.exit(2);
  }
  const tok = Tokenizer.fromFile(tokPath);
  const strings = JSON.parse(fs.readFileSync(inPath, 'utf8'));
  const ids = [];
  const decoded = [];
  for (const s of strings) {
    const enc = await tok.encode(s, null, { addSpecialTokens: false });
    const row = Array.from(enc.getIds());
    ids.push(row);
    decoded.push(await tok.decode(row, false));
  }
  fs.writeFileSync(outPath, JSON.stringify({ ids, decoded }));
}

main().catch((e) => {
  console.error('tokenize_reference.js:', e && e.stack ? e.stack : e);
  process.exit(1);
});
