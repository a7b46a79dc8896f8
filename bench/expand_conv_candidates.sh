#!/usr/bin/env bash
# Every candidate perf config of EfficientNet-B0's expand and depthwise convolutions, timed on
# the GPU (bench/expand_conv_models.py; results/2026-12-04b_expand_conv_candidates.txt):
#   python3 bench/expand_conv_models.py .bench-expand     here (needs onnx and numpy)
#   bench/expand_conv_candidates.sh [MODELS...]            there, with carry [".gpu", ".bench-expand"]
# Writes $OUT/expand.tgz: per model the tuner's trace (a "candidate CONFIG MS" line per config,
# @8 is the convolution under test) and `conflux perf`'s launches with the winners.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/conflux-expand-out}
. bench/device_env.sh
bin=${CONFLUX:-.gpu/bin/conflux}
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(e1 e2 e3 e4 e5 e6 e7 e8 e9)
for e in "${models[@]}"; do
    start=$(date +%s)
    "$bin" compile ".bench-expand/$e.onnx" --fp16 --target cuda --tune exhaustive --trace-compile \
        --quiet --problem-cache "$OUT/problems.sqlite" >"$OUT/$e.trace" 2>&1
    "$bin" perf ".bench-expand/$e.onnx" --fp16 --problem-cache "$OUT/problems.sqlite" --top 10 \
        >"$OUT/$e.perf" 2>&1
    echo "$e $(($(date +%s) - start)) s"
    grep -E "^ +[0-9.]+%" "$OUT/$e.perf" | head -4
done
(cd "$OUT" && tar czf expand.tgz ./*.trace ./*.perf && rm -f ./*.trace ./*.perf)
