#!/usr/bin/env bash
# The GPU suite in one device call.
#   scripts/gpu_suite.sh pack   here: build, then put the binaries, the ONNX test data and the
#                               Python package in .gpu/pack.txz (ignored by git; carried to the
#                               device with `carry: [".gpu"]`; the scripts that run there unpack
#                               it, bench/device_env.sh). Binaries for an A/B go beside it, e.g.
#                               .gpu/old/conflux, uncompressed
#   scripts/gpu_suite.sh run    on the GPU machine, from the repository root: every GPU test,
#                               a summary table printed last and in $OUT/summary.txt, the logs
#                               in $OUT/suite_logs.tgz, and $OUT/suite.done once the GPU is free
#                               again (bench_zoo.py --wait-for times models after it)
#   scripts/gpu_suite.sh run --skip-gemm-harness   the same without the generator's own
#                               every-config harness (the slowest step)
#   scripts/gpu_suite.sh run --only-gemm-harness   that harness alone. Since the _pp configs
#                               joined it, the op tests and the harness each take about five
#                               minutes from a cold kernel cache: the whole suite is two calls,
#                               --skip-gemm-harness and --only-gemm-harness
set -uo pipefail
cd "$(dirname "$0")/.."

pack() {
    set -e
    cmake -S . -B build -G Ninja >/dev/null
    cmake --build build --target conflux_tool gpu_op_tests gpu_gemm_kernel_test onnx_conformance \
        conflux_bench_conv_layers conflux_bench_attention gpu_problem_cache_test gpu_device_binding_test
    rm -rf .gpu && mkdir -p .gpu/bin
    cp build/bin/conflux build/bin/gpu_op_tests build/bin/gpu_gemm_kernel_test build/bin/onnx_conformance \
        build/bin/conflux_bench_conv_layers build/bin/conflux_bench_attention build/bin/gpu_problem_cache_test \
        build/bin/gpu_device_binding_test .gpu/bin/
    strip .gpu/bin/*
    # What the binaries were built from (the device's copy of the tree may carry a stale .git).
    echo "$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src include tools || echo +changes)" \
        >.gpu/COMMIT
    tar cJf .gpu/testdata.txz -C /usr/share/libonnx-testdata/data \
        node pytorch-converted pytorch-operator simple
    # The Python package for the GPU machine's python3 (3.12), when this machine has that
    # version (CONFLUX_GPU_PYTHON, default pyenv's).
    local gpu_python=${CONFLUX_GPU_PYTHON:-$(ls -d /root/.pyenv/versions/3.12*/bin/python3.12 2>/dev/null | head -1)}
    if [ -n "$gpu_python" ] && [ -x "$gpu_python" ]; then
        scripts/python_module_for.sh "$gpu_python" .gpu/python
    fi
    (cd .gpu && tar cJf pack.txz bin testdata.txz $([ -d python ] && echo python) &&
        rm -rf bin testdata.txz python)
    du -sh .gpu/pack.txz
}

run() {
    OUT=${OUT:-/tmp/conflux-gpu-out}
    . bench/device_env.sh
    export CONFLUX_KERNEL_CACHE=/tmp/conflux-kernels
    local bin=.gpu/bin data=/tmp/onnx-testdata
    mkdir -p $data && tar xJf .gpu/testdata.txz -C $data
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,memory.used --format=csv | tee "$OUT/device.txt"
    local rows=()
    step() { # step NAME LOG COMMAND...: runs (at most 5 minutes), records pass/fail and the
        # last line of its log
        local name=$1 log=$2
        shift 2
        local start=$SECONDS
        timeout -s KILL "${STEP_LIMIT:-300}" "$@" >"$OUT/$log" 2>&1
        local rc=$?
        rows+=("$(printf '%-34s %-5s %5ss  %s' "$name" "$([ $rc = 0 ] && echo pass || echo FAIL)" \
            $((SECONDS - start)) "$(grep -v '^\s*$' "$OUT/$log" | tail -1 | cut -c1-90)")")
        # As it goes too, so a call that runs out of time still says what passed.
        printf '%s\n' "${rows[-1]}" >>"$OUT/rows.txt"
    }
    # The generator's harness runs beside the op tests: both are correctness checks, mostly
    # NVRTC on the CPU cores, and together they take half the suite's time.
    if [ "${1:-}" = --only-gemm-harness ]; then
        STEP_LIMIT=560 step "gemm generator, every config" gemm_kernels.log \
            $bin/gpu_gemm_kernel_test check
        finish
        return
    fi
    if [ "${1:-}" != --skip-gemm-harness ]; then
        (STEP_LIMIT=560 step "gemm generator, every config" gemm_kernels.log \
            $bin/gpu_gemm_kernel_test check
            printf '%s\n' "${rows[@]}" >"$OUT/gemm_row.txt") &
    fi
    STEP_LIMIT=450 step "op tests (cuda vs ref)" op_tests.log $bin/gpu_op_tests
    wait
    [ -f "$OUT/gemm_row.txt" ] && rows+=("$(tail -1 "$OUT/gemm_row.txt")") && rm "$OUT/gemm_row.txt"
    step "problem cache regression" problem_cache.log $bin/gpu_problem_cache_test
    step "run_on_device (caller buffers)" device_binding.log $bin/gpu_device_binding_test
    step "onnx conformance cuda vs ref" conformance.log $bin/onnx_conformance --target cuda \
        --min-passed 605 $data/node $data/pytorch-converted $data/pytorch-operator $data/simple
    step "repo models vs onnxruntime" models.log $bin/onnx_conformance --target cuda \
        --min-passed 16 tests/models/data
    for d in tests/models/data/*/; do
        step "verify $(basename "$d")" "verify_$(basename "$d").log" $bin/conflux verify "$d/model.onnx"
    done
    step "verify examples/conv_block" verify_conv_block.log $bin/conflux verify examples/conv_block.onnx
    if python3 bench/make_resnet50.py /tmp/resnet50.onnx --batch 1 >"$OUT/resnet50_make.log" 2>&1; then
        step "resnet50 memory plan" resnet50_plan.log $bin/conflux compile --target cuda /tmp/resnet50.onnx
        grep "memory plan" "$OUT/resnet50_plan.log"
        step "verify resnet50 batch 1" verify_resnet50.log $bin/conflux verify /tmp/resnet50.onnx
    fi
    # Batch 8: an input over 1 MiB, so the stem runs padded to 4 channels (pad_conv_channels).
    if python3 bench/make_resnet50.py /tmp/resnet50_b8.onnx --batch 8 >>"$OUT/resnet50_make.log" 2>&1; then
        step "verify resnet50 batch 8 (padded stem)" verify_resnet50_b8.log $bin/conflux verify \
            /tmp/resnet50_b8.onnx
    fi
    # Compiled-program files: saved, loaded by a new process, bit-identical outputs.
    if python3 bench/make_resnet50.py /tmp/resnet50_b32.onnx --batch 32 >>"$OUT/resnet50_make.log" 2>&1; then
        step "cfx round trip resnet50 f16 b32" cfx_resnet50.log scripts/cfx_round_trip.sh \
            $bin/conflux /tmp/resnet50_b32.onnx --fp16
        grep -E "loaded|^time|bit-identical" "$OUT/cfx_resnet50.log"
    fi
    if [ -d .gpu/python ]; then
        # The GPU machine's Python has pytest plugins of its own (pytest-timeout) that the
        # carried pytest does not know: none are loaded.
        step "python package (pytest, gpu tests)" python_package.log env \
            PYTHONPATH=.gpu/python:.gpu/python/pydeps CONFLUX_SOURCE_DIR="$(pwd)" \
            PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 \
            python3 -m pytest -q -p no:cacheprovider python/tests
    fi
    if [ -d .gpu/python ] && [ -f /tmp/resnet50_b32.onnx ]; then
        step "python: resnet50 .cfx load, torch overhead" python_cfx.log env \
            PYTHONPATH=.gpu/python python3 bench/python_cfx.py /tmp/resnet50_b32.onnx --fp16 \
            --json "$OUT/python_cfx.json"
    fi
    step "cfx round trip grouped_query_attention" cfx_gqa.log scripts/cfx_round_trip.sh \
        $bin/conflux tests/models/data/grouped_query_attention/model.onnx --fp16
    step "model zoo cuda vs onnxruntime" zoo.log $bin/onnx_conformance --target cuda -j 8 \
        --min-passed 56 tests/zoo/data
    # A few zoo models through `conflux verify` as a user runs it: TF32 convolutions and matrix
    # products by default, judged by the precision that ran.
    for m in tv_resnet_bottleneck_dynamo tv_convnext_script hf_bert_dynamo tv_deeplabv3_head_dynamo; do
        step "verify zoo $m" "verify_zoo_$m.log" $bin/conflux verify "tests/zoo/data/$m/model.onnx"
    done
    grep -E "^(ref|cuda) " "$OUT/conformance.log"
    grep "FAIL" "$OUT/op_tests.log" | head -20
    grep "fused pattern matrix" "$OUT/op_tests.log"
    finish
}

finish() { # the table last, the logs as one archive
    echo
    {
        printf '%-34s %-5s %6s  %s\n' "GPU suite" "" "time" "last line of the log"
        printf '%s\n' "${rows[@]}"
    } | tee "$OUT/summary.txt"
    # The device tool brings back only a few files: the logs travel as one archive.
    (cd "$OUT" && tar czf suite_logs.tgz ./*.log && rm -f ./*.log)
    touch "$OUT/suite.done"
}

case "${1:-}" in
pack) pack ;;
run) run "${2:-}" ;;
*) echo "usage: $0 pack|run" >&2; exit 2 ;;
esac
