#!/usr/bin/env bash
L=/tmp/gs-gpu-libs; mkdir -p $L; for f in build-libs/gpu-libs/*.gz; do gunzip -c $f > $L/$(basename ${f%.gz}); done
export LD_LIBRARY_PATH=$L:/usr/local/cuda/lib64 PATH=/usr/local/cuda/bin:$PATH
for n in attn-persistent main; do gunzip -c build-ab1/$n.gz > /tmp/$n && chmod +x /tmp/$n; done
b() { GS_BENCH_ATTENTION_SHAPES="${SH:-prefill 8k hd256}" timeout 100 "$@" --gtest_also_run_disabled_tests --gtest_filter='AttentionBench.*' 2>&1 | grep -E "${PAT:-auto|persistent}" ; }
for r in 1 2; do
  echo "== round $r main"; PAT=auto b /tmp/main
  for pr in 72 88; do echo "== round $r persist pregs $pr"; PAT=persistent GS_ATTN_PERSIST_PREGS=$pr b /tmp/attn-persistent; done
done
timeout 150 /tmp/attn-persistent --gtest_color=no --gtest_filter='Attention.WgmmaKernelsOnEveryShapeTheyAccept' > $OUT/tests.log 2>&1; echo "tests rc=$?"; grep -E '^\[ *(OK|FAILED) *\]' $OUT/tests.log
