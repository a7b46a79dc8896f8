#!/usr/bin/env bash
# The zoo's speed table (bench/zoo/bench_zoo.py) on the GPU machine, over as many device calls
# as it needs: each call times the models it has time for and keeps what earlier calls measured
# with the same binary.
#   bench/zoo/bench_zoo.sh pack   here: build conflux into .bench-pack/bin (with COMMIT); the
#                                 state of earlier calls, if any, is in .bench-pack/state
#   bench/zoo/bench_zoo.sh run [bench_zoo.py options]
#                                 there (carry [".bench-pack"]): the table, the JSON record and
#                                 the problem cache under $OUT; copy $OUT/zoo_speed.json and
#                                 $OUT/problems.sqlite into .bench-pack/state/ for the next call
# Environment: BENCH_ONLY (models, comma-separated), BENCH_SECONDS (no model's timing starts
# after this many seconds; default 480), BENCH_TUNE (default quick), BENCH_JOBS (default 6),
# BENCH_CONFLUX (the binary, default .bench-pack/bin/conflux; .gpu/bin/conflux when the GPU
# suite travels in the same call).
set -uo pipefail
cd "$(dirname "$0")/../.."

pack() {
    set -e
    cmake -S . -B build -G Ninja >/dev/null
    cmake --build build --target conflux_tool
    mkdir -p .bench-pack/bin .bench-pack/state
    cp build/bin/conflux .bench-pack/bin/ && strip .bench-pack/bin/conflux
    echo "$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src include tools || echo +changes)" \
        >.bench-pack/COMMIT
    du -sh .bench-pack
}

run() {
    OUT=${OUT:-/tmp/conflux-bench-out}
    . bench/device_env.sh # a compressed .gpu pack unpacked, for BENCH_CONFLUX=.gpu/bin/conflux
    local state=.bench-pack/state
    [ -f $state/problems.sqlite ] && cp $state/problems.sqlite "$OUT/problems.sqlite" &&
        chmod u+w "$OUT/problems.sqlite"
    python3 -c "import torch, torchvision, timm, transformers
print('torch', torch.__version__, 'torchvision', torchvision.__version__, 'timm', timm.__version__,
      'transformers', transformers.__version__)" | tee "$OUT/versions.txt"
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a "$OUT/versions.txt"
    python3 bench/zoo/bench_zoo.py .bench-work --conflux "${BENCH_CONFLUX:-.bench-pack/bin/conflux}" \
        --tune "${BENCH_TUNE:-quick}" --problem-cache "$OUT/problems.sqlite" \
        --jobs "${BENCH_JOBS:-6}" --deadline "${BENCH_SECONDS:-480}" \
        --resume $state/zoo_speed.json --json "$OUT/zoo_speed.json" \
        --markdown "$OUT/zoo_speed.md" ${BENCH_ONLY:+--only $BENCH_ONLY} "$@" >"$OUT/bench.log" 2>&1
    local rc=$?
    tar czf "$OUT/logs.tgz" .bench-work/*/*.log .bench-work/*/*.json 2>/dev/null
    grep -E "^\[|^batch|models to time" "$OUT/bench.log" | tail -60
    tail -3 "$OUT/bench.log"
    return $rc
}

case "${1:-}" in
pack) pack ;;
run) shift; run "$@" ;;
*) echo "usage: $0 pack|run [bench_zoo.py options]" >&2; exit 2 ;;
esac
