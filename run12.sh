#!/usr/bin/env bash
L=/tmp/gs-gpu-libs; mkdir -p $L; for f in build-libs/gpu-libs/*.gz; do gunzip -c $f > $L/$(basename ${f%.gz}); done
export LD_LIBRARY_PATH=$L:/usr/local/cuda/lib64 PATH=/usr/local/cuda/bin:$PATH
gunzip -c build-ab1/attn-persistent-dbg.gz > /tmp/d && chmod +x /tmp/d
timeout 120 /tmp/d --gtest_color=no --gtest_filter='Attention.WgmmaKernelsOnEveryShapeTheyAccept' > $OUT/tests.log 2>&1; echo "tests rc=$?"
grep -E 'stuck|OK|FAILED|Failure|error' $OUT/tests.log | sort | uniq -c | sort -rn | head -20
