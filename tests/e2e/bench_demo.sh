#!/usr/bin/env bash
# gemmaserve bench and eval against `gemmaserve serve` on the demo model (cpu): a short random
# benchmark on both endpoints whose JSON must hold every metric with sane values, a 2-point
# sweep, the per-request JSONL and SVG plots, and eval on the repo's multiple-choice fixture in
# both modes. Bench runs with --tokenizer and, without it, on the server's own tokenizer
# (POST /tokenize): prompts still of exact token lengths. Bounded: every client command runs
# under `timeout`.
# Usage (ctest): bash bench_demo.sh GEMMASERVE_BINARY SOURCE_DIR
set -euo pipefail
bin="$1"; src="$2"
source "$src/tests/e2e/server_lib.bash"
work="$(mktemp -d)"
trap 'gs_cleanup; rm -rf "$work"' EXIT
gs_start_server "$bin" "$work/server.log" --backend cpu --max-model-len 512 --max-num-seqs 8
demo="$GS_DEMO_DIR"  # the server created the demo model there
status=0

common=(--base-url "$GS_BASE_URL" --dataset-name random
        --random-input-len 32 --random-output-len 8 --random-range-ratio 0.5 --max-concurrency 4
        --ignore-eos --seed 7 --disable-tqdm)
gs_run "$bin" bench "${common[@]}" --tokenizer "$demo" --num-prompts 20 --random-range-mode sglang --warmup-requests 2 --goodput ttft:60000 tpot:60000 \
  --output-json "$work/completions.json" --output-requests "$work/requests.jsonl" --plot "$work/plots" \
  --request-rate 50 --burstiness 0.8
gs_run "$bin" bench "${common[@]}" --num-prompts 20 --random-range-mode vllm --random-prefix-len 8 --endpoint /v1/chat/completions \
  --output-json "$work/chat.json"
gs_run "$bin" bench "${common[@]}" --num-prompts 6 --sweep max-concurrency=1,3 --output-json "$work/sweep.json" \
  --plot "$work/sweep_plots"
# No --tokenizer (nor above, but for the first run): the server's. Exact lengths: 6 x 32 tokens.
gs_run "$bin" bench --base-url "$GS_BASE_URL" --dataset-name random --random-input-len 32 --random-output-len 4 \
  --num-prompts 6 --ignore-eos --seed 3 --disable-tqdm --output-json "$work/exact.json" 2>"$work/exact.err"
grep -q "server's tokenizer" "$work/exact.err" || { echo "bench did not say it used the server's tokenizer"; status=1; }
gs_run "$bin" eval --base-url "$GS_BASE_URL" --dataset "$src/fixtures/eval/mini_mc.jsonl" --concurrency 4 \
  --max-tokens 8 --output "$work/eval_gen.jsonl" --output-json "$work/eval_gen.json" --disable-tqdm
gs_run "$bin" eval --base-url "$GS_BASE_URL" --dataset "$src/fixtures/eval/mini_mc.jsonl" --mode loglikelihood \
  --limit 6 --output "$work/eval_ll.jsonl" --output-json "$work/eval_ll.json" --disable-tqdm

# A server that does not tokenize (here: a path prefix with nothing behind it), and no --tokenizer:
# an error that says to pass --tokenizer.
if "$bin" bench --base-url "$GS_BASE_URL/nothing" --model demo --num-prompts 1 --disable-tqdm >"$work/notok.out" 2>&1; then
  echo "bench ran random prompts with no tokenizer at all"; status=1
elif ! grep -q "needs a tokenizer.*pass --tokenizer.*does not tokenize.*HTTP 404" "$work/notok.out"; then
  echo "unclear error without a tokenizer:"; cat "$work/notok.out"; status=1
fi

# A wrong option value is a clear error, not a crash.
if "$bin" bench --base-url "$GS_BASE_URL" --tokenizer "$demo" --random-range-mode vllm --random-range-ratio 1.5 \
     --num-prompts 1 --disable-tqdm >"$work/bad.out" 2>&1; then
  echo "bench accepted --random-range-ratio 1.5 in vllm mode"; status=1
elif ! grep -q "must be in \[0, 1)" "$work/bad.out"; then
  echo "unclear error for a bad range ratio:"; cat "$work/bad.out"; status=1
fi

[ $status -eq 0 ] && /usr/bin/python3 - "$work" <<'PY' || status=1
import json, math, os, sys
w = sys.argv[1]
load = lambda n: json.load(open(os.path.join(w, n)))
keys = ["completed", "failed", "duration", "total_input_tokens", "total_output_tokens", "request_throughput",
        "request_goodput", "input_throughput", "output_throughput", "total_token_throughput",
        "max_output_tokens_per_s", "max_concurrent_requests"]
keys += [f"{s}_{m}_ms" for m in ("ttft", "tpot", "itl", "e2el") for s in ("mean", "median", "std", "p90", "p99")]

def check(r, n, out_len_max, label):
    missing = [k for k in keys if k not in r]
    assert not missing, f"{label}: missing {missing}"
    assert r["completed"] == n and r["failed"] == 0, f"{label}: completed {r['completed']} failed {r['failed']}"
    assert r["duration"] > 0 and r["request_throughput"] > 0 and r["output_throughput"] > 0, label
    # --ignore-eos: every request generates its full drawn output length (at least 4 of up to 8 here).
    assert 4 * n <= r["total_output_tokens"] <= out_len_max * n, f"{label}: {r['total_output_tokens']} output tokens"
    assert r["total_input_tokens"] >= 16 * n, label
    for m in ("ttft", "tpot", "itl", "e2el"):
        assert 0 < r[f"median_{m}_ms"] <= r[f"p99_{m}_ms"] < 120000, f"{label}: {m}"
    assert r["mean_e2el_ms"] >= r["mean_ttft_ms"], label
    # Requests touching the same 1-second bucket (vLLM's definition), so not bounded by the concurrency.
    assert 1 <= r["max_concurrent_requests"] <= n and r["max_output_tokens_per_s"] >= 1, label
    assert abs(r["total_token_throughput"] - r["input_throughput"] - r["output_throughput"]) < 1e-6, label

ex = load("exact.json")
assert ex["completed"] == 6 and ex["total_input_tokens"] == 6 * 32, ex["total_input_tokens"]
assert ex["tokenizer"].endswith("/tokenize"), ex["tokenizer"]
c = load("completions.json")
check(c, 20, 8, "completions")
assert c["random_range_mode"] == "sglang" and c["request_goodput"] is not None
assert c["request_goodput"] == c["request_throughput"], "every request meets a 60 s objective"
check(load("chat.json"), 20, 12, "chat")  # vllm mode: output lengths up to int(8 * 1.5)
reqs = [json.loads(l) for l in open(os.path.join(w, "requests.jsonl"))]
assert len(reqs) == 20 and all(r["success"] and r["output_len_from_usage"] for r in reqs)
assert all(len(r["itl"]) >= 1 and r["ttft"] <= r["e2el"] for r in reqs)
for f in ("ttft_cdf", "tpot_cdf", "itl_cdf", "e2el_cdf", "output_throughput"):
    s = open(os.path.join(w, "plots", f + ".svg")).read()
    assert s.startswith("<?xml") and s.rstrip().endswith("</svg>"), f
sw = load("sweep.json")
assert [r["max-concurrency"] for r in sw["runs"]] == [1, 3] and all(r["completed"] == 6 for r in sw["runs"])
assert os.path.exists(os.path.join(w, "sweep_plots", "sweep.svg"))
assert os.path.exists(os.path.join(w, "sweep_plots", "max-concurrency_3", "ttft_cdf.svg"))
for name, n in (("eval_gen", 22), ("eval_ll", 6)):
    e = load(name + ".json")
    items = [json.loads(l) for l in open(os.path.join(w, name + ".jsonl"))]
    assert e["n"] == n == len(items) and e["errors"] == 0, (name, e)
    assert 0 <= e["accuracy"] <= 1 and e["correct"] == sum(i["correct"] for i in items), name
    assert math.isclose(e["stderr"], math.sqrt(e["accuracy"] * (1 - e["accuracy"]) / (n - 1)), abs_tol=1e-9), name
assert all(len(i["scores"]) >= 2 and all(s < 0 for s in i["scores"]) for i in
           (json.loads(l) for l in open(os.path.join(w, "eval_ll.jsonl"))))
print("bench_demo: bench (completions, chat, sweep) and eval (generate, loglikelihood) OK")
PY

# Clean shutdown on SIGTERM is the server's own e2e tests' business (openai_client.sh); here it
# is only reported, so a server-side regression does not show up as a bench failure.
gs_stop_server || echo "warning: the server did not exit 0 on SIGTERM"
if [ $status -ne 0 ]; then
  echo "---- server log (tail) ----"
  tail -30 "$work/server.log"
fi
exit $status
