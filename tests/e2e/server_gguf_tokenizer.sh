#!/usr/bin/env bash
# Dummy weights with the real Gemma-4 tokenizer, as tools/gpu/bench_cookbook.sh serves the
# presets: a tiny model shape with Gemma-4's full 262,144-id vocabulary, --tokenizer the GGUF
# vocabulary and --chat-template the official template. Both endpoints stream one event per
# token when benchmarked with the same tokenizer, a chat request renders through the official
# template, and a tokenizer larger than the model's vocabulary is refused at start-up.
# Usage (ctest): bash server_gguf_tokenizer.sh GEMMASERVE_BINARY SOURCE_DIR
set -euo pipefail
bin="$1"; src="$2"
vocab="$src/.cache/testdata/gemma4/ggml-vocab-gemma-4.gguf"
template="$src/.cache/testdata/gemma4/templates/google-gemma-4-31B-it.jinja"
for f in "$vocab" "$template"; do
  [ -f "$f" ] || { echo "missing $f: run scripts/fetch-test-data.sh" >&2; exit 1; }
done
source "$src/tests/e2e/server_lib.bash"
work="$(mktemp -d)"
trap 'gs_cleanup; rm -rf "$work"' EXIT

# The demo model's shape (6 layers, hidden 128) with the real vocabulary: ~61 M parameters.
mkdir -p "$work/tiny"
/usr/bin/python3 - "$work/tiny/config.json" <<'PY'
import json, sys
text = {"model_type": "gemma4_text", "vocab_size": 262144, "vocab_size_per_layer_input": 262144,
        "hidden_size": 128, "hidden_size_per_layer_input": 16, "intermediate_size": 256,
        "num_hidden_layers": 6, "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 256,
        "global_head_dim": 512, "num_kv_shared_layers": 2, "sliding_window": 64, "max_position_embeddings": 4096,
        "layer_types": ["sliding_attention", "sliding_attention", "full_attention"] * 2,
        "rope_parameters": {"full_attention": {"partial_rotary_factor": 0.25, "rope_theta": 1e6, "rope_type": "proportional"},
                            "sliding_attention": {"rope_theta": 1e4, "rope_type": "default"}},
        "hidden_activation": "gelu_pytorch_tanh", "final_logit_softcapping": 30.0, "rms_norm_eps": 1e-6,
        "attention_bias": False, "attention_k_eq_v": False, "enable_moe_block": False, "use_double_wide_mlp": True,
        "tie_word_embeddings": True, "bos_token_id": 2, "eos_token_id": 1, "pad_token_id": 0}
json.dump({"architectures": ["Gemma4ForConditionalGeneration"], "model_type": "gemma4", "text_config": text,
           "vision_config": None, "audio_config": None, "tie_word_embeddings": True, "eos_token_id": [1]},
          open(sys.argv[1], "w"))
PY

status=0
# A tokenizer with more ids than the model has embeddings is a start-up error, not a crash later.
if "$bin" serve --backend cpu --port 0 --tokenizer "$vocab" >"$work/bad.log" 2>&1; then
  echo "serve accepted a 262,144-id tokenizer for the demo model"; status=1
elif ! grep -q "more than the vocabulary" "$work/bad.log"; then
  echo "unclear error for a tokenizer larger than the model:"; tail -5 "$work/bad.log"; status=1
fi

gs_start_server "$bin" "$work/server.log" --backend cpu --model "$work/tiny" --load-format dummy \
  --tokenizer "$vocab" --chat-template "$template" --max-model-len 512 --max-num-seqs 16
common=(--base-url "$GS_BASE_URL" --tokenizer "$vocab" --dataset-name random --random-input-len 48
        --random-output-len 12 --random-range-mode sglang --ignore-eos --max-concurrency 8 --num-prompts 16
        --disable-tqdm --seed 3)
gs_run "$bin" bench "${common[@]}" --output-json "$work/cmpl.json" --output-requests "$work/cmpl.jsonl" >"$work/cmpl.txt"
gs_run "$bin" bench "${common[@]}" --endpoint /v1/chat/completions --output-json "$work/chat.json" \
  --output-requests "$work/chat.jsonl" >"$work/chat.txt"
curl -sf "$GS_BASE_URL/v1/chat/completions" -H 'Content-Type: application/json' \
  -d '{"messages":[{"role":"user","content":"Hello there"}],"max_tokens":5,"ignore_eos":true}' >"$work/chat_reply.json" \
  || { echo "chat completion failed"; status=1; }
curl -sf "$GS_BASE_URL/tokenize" -H 'Content-Type: application/json' \
  -d '{"messages":[{"role":"user","content":"Hello there"}],"return_token_strs":true}' >"$work/tok.json" \
  || { echo "/tokenize failed"; status=1; }

[ $status -eq 0 ] && /usr/bin/python3 - "$work" <<'PY' || status=1
import json, os, sys
w = sys.argv[1]
for name in ("cmpl", "chat"):
    r = json.load(open(os.path.join(w, name + ".json")))
    assert r["completed"] == 16 and r["failed"] == 0, f"{name}: {r['failed']} failed"
    for q in map(json.loads, open(os.path.join(w, name + ".jsonl"))):
        assert q["output_len_from_usage"] and len(q["itl"]) == q["output_len"] - 1, (name, q["index"], q["output_len"])
reply = json.load(open(os.path.join(w, "chat_reply.json")))
assert reply["usage"]["completion_tokens"] == 5, reply
strs = json.load(open(os.path.join(w, "tok.json")))["token_strs"]
# The official template's turn markers, as single tokens of the real vocabulary.
assert strs[0] == "<bos>" and "<|turn>" in strs and "<turn|>" in strs, strs
print("gguf tokenizer: completions and chat stream one event per token; the official template renders")
PY

gs_stop_server || { echo "server did not shut down cleanly (SIGTERM -> exit 0)"; status=1; }
[ $status -eq 0 ] || { echo "---- server log (tail) ----"; tail -30 "$work/server.log"; }
exit $status
