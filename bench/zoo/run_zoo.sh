#!/usr/bin/env bash
# The full-size model zoo on the GPU machine, in one device call.
#   bench/zoo/run_zoo.sh pack   here: build conflux, then put it and the wheels the GPU machine
#                               lacks (timm, transformers and what they import) in .zoo-pack/;
#                               carry [".zoo-pack"]
#   bench/zoo/run_zoo.sh run [run_zoo.py options]
#                               there: export the zoo (make_zoo.py) into .zoo/, run Conflux over
#                               it (run_zoo.py), the table and logs under $OUT
# The device keeps ignored folders between calls while it stays warm, so a second `run` reuses
# .zoo/ (ZOO_REEXPORT=1 exports again).
set -uo pipefail
cd "$(dirname "$0")/../.."

# The GPU machine has Python 3.12 with torch, torchvision, onnx and onnxruntime; these are what
# the zoo needs beyond them (timm, transformers, onnxscript and what they import), at the
# versions tested on the development machine.
wheels=(timm==1.0.31 transformers==5.24.0 onnxscript==0.7.2 onnx-ir==1.1.0 ml-dtypes==0.7.0
    huggingface-hub==2.4.0 safetensors==0.8.0 tokenizers==0.23.3 hf-xet==1.8.0 regex==2026.5.9
    pyyaml==6.0.3 tqdm==4.70.1 packaging==26.4 filelock==4.3.1 fsspec==2026.9.0
    httpx2==2.16.2 httpcore2==2.16.2 h11==0.16.0 anyio==4.16.0 idna==3.20 truststore==0.10.5
    typer==0.29.2 click==8.5.1 rich==15.0.0 markdown-it-py==4.3.0 mdurl==0.1.2 pygments==2.20.0
    shellingham==1.5.4 annotated-doc==0.0.7 annotated-types==0.7.0 pydantic==2.13.4
    pydantic-core==2.46.4 typing-inspection==0.4.2)

pack() {
    set -e
    cmake -S . -B build -G Ninja >/dev/null
    cmake --build build --target conflux_tool
    rm -rf .zoo-pack && mkdir -p .zoo-pack/bin .zoo-pack/whl
    cp build/bin/conflux .zoo-pack/bin/ && strip .zoo-pack/bin/conflux
    echo "$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src include tools || echo +changes)" \
        >.zoo-pack/COMMIT
    pip download --quiet --dest .zoo-pack/whl --no-deps --only-binary=:all: --python-version 3.12 \
        --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 \
        --platform manylinux_2_17_x86_64 "${wheels[@]}"
    du -sh .zoo-pack
}

run() {
    OUT=${OUT:-/tmp/conflux-zoo-out}
    mkdir -p "$OUT"
    export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    export CONFLUX_KERNEL_CACHE=/tmp/conflux-kernels
    # The wheels unpacked into .pydeps, which make_zoo.py puts at the end of sys.path: the
    # machine's own torch, numpy and onnx stay in charge, the rest is found there.
    if [ ! -d .pydeps ]; then
        for f in .zoo-pack/whl/*.whl; do
            [ -f "$f" ] && python3 -m zipfile -e "$f" .pydeps
        done
    fi
    export ZOO_PYDEPS=$PWD/.pydeps
    python3 -c "import os, sys; sys.path.append(os.environ['ZOO_PYDEPS'])
import torch, torchvision, timm, transformers, onnx, onnxruntime, onnxscript
print('torch', torch.__version__, 'torchvision', torchvision.__version__, 'timm', timm.__version__,
      'transformers', transformers.__version__, 'onnx', onnx.__version__,
      'onnxruntime', onnxruntime.__version__, 'onnxscript', onnxscript.__version__)" |
        tee "$OUT/versions.txt"
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a "$OUT/versions.txt"
    # Models exported by an earlier call are kept (ZOO_REEXPORT=1 exports all again); the
    # export stops after ZOO_EXPORT_SECONDS so that the same call still runs what it has.
    [ "${ZOO_REEXPORT:-0}" = 1 ] && rm -rf .zoo
    python3 bench/zoo/make_zoo.py .zoo --skip-done --deadline "${ZOO_EXPORT_SECONDS:-330}" \
        --jobs "${ZOO_JOBS:-16}" ${ZOO_ONLY:+--only $ZOO_ONLY} >>"$OUT/export.log" 2>&1
    echo "export: ${SECONDS} s, rc $?" | tee -a "$OUT/versions.txt"
    tail -3 "$OUT/export.log"
    # Within the device's 10 minutes a call: no case starts after ZOO_SECONDS (default 520) of
    # the call; a second call picks up there (--resume keeps what passed with this binary).
    python3 bench/zoo/run_zoo.py .zoo --conflux .zoo-pack/bin/conflux --markdown "$OUT/zoo.md" \
        --json "$OUT/zoo.json" --resume --deadline $((${ZOO_SECONDS:-520} - SECONDS)) "$@" \
        >"$OUT/run.log" 2>&1
    local rc=$?
    # The cases' own records and the exporters' tracebacks, small enough to bring back.
    tar czf "$OUT/cases.tgz" .zoo/*/case.json .zoo/*/result.json .zoo/*/*.log \
        .zoo/*/error.txt 2>/dev/null
    grep -E "^\[" "$OUT/run.log" | grep -v ": pass" | tail -40
    tail -1 "$OUT/run.log"
    return $rc
}

case "${1:-}" in
pack) pack ;;
run) shift; run "$@" ;;
*) echo "usage: $0 pack|run [run_zoo.py options]" >&2; exit 2 ;;
esac
