#!/usr/bin/env bash
# One device call: how long tuning takes and what it buys, on the ResNet-50-shaped model
# (bench/make_resnet50.py, f16, batch 32). A cold `conflux compile --tune=quick` (empty problem
# and kernel caches), the same compile again (both caches warm), then `conflux perf` of the
# heuristic's program (--tune=none, an empty problem cache) and of the tuned one. Build and pack
# first with `scripts/gpu_suite.sh pack` (carry .gpu). Logs go to $OUT.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
. bench/device_env.sh
packed conflux
model=/tmp/resnet50_f16_b32.onnx
python3 bench/make_resnet50.py $model --batch 32 --fp16 || exit 2
work=$(mktemp -d)
caches=(--problem-cache "$work/problems.sqlite" --kernel-cache "$work/kernels")

date -u +"%Y-%m-%d %H:%M UTC"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
seconds() { # seconds LOG COMMAND...: runs it, prints its wall time
    local log=$1 start end
    shift
    start=$(date +%s%N)
    "$@" >"$OUT/$log" 2>&1
    local rc=$?
    end=$(date +%s%N)
    local ms=$(((end - start) / 1000000))
    printf '%d.%03d s (exit %s)' $((ms / 1000)) $((ms % 1000)) $rc
}
echo "cold compile, --tune=quick:  $(seconds tune_cold.log $bin compile --target cuda --tune quick "${caches[@]}" $model)"
grep -E "^tuning:|^compiled" "$OUT/tune_cold.log"
echo "warm compile, --tune=quick:  $(seconds tune_warm.log $bin compile --target cuda --tune quick "${caches[@]}" $model)"
grep -E "^tuning:|^compiled" "$OUT/tune_warm.log"
echo
echo "== conflux perf, --tune=none (the heuristic's configs)"
$bin perf $model --tune none --problem-cache "$work/empty.sqlite" --kernel-cache "$work/kernels" \
    -n 50 -t 8 2>&1 | grep -v "^conflux: input"
echo
echo "== conflux perf, tuned (problem cache from the cold compile)"
$bin perf $model --tune quick "${caches[@]}" -n 50 -t 8 2>&1 | grep -v "^conflux: input"
rm -rf "$work"
