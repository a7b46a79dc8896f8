#!/usr/bin/env bash
# Depthwise convolutions on the direct kernel (B) against the implicit-GEMM generator (A): the
# same three zoo models at batch 32 in f16, `conflux perf --tune none` of both binaries, the
# slowest launches of each, `conflux verify` of B, and PyTorch eager (f16, channels last, cuDNN
# benchmark) in the same call. On the GPU machine: carry [".ab"] holding conflux_a and conflux_b.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/ab-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
models=convnext_tiny,mobilenet_v2,efficientnet_b0
python3 bench/zoo/make_zoo.py .ab/zoo --only $models --variants script_dyn --jobs 3 \
    >"$OUT/export.log" 2>&1 || tail -5 "$OUT/export.log"
for m in ${models//,/ }; do
    f=.ab/zoo/${m}_script_dyn/model.onnx
    for b in a b; do
        CONFLUX_KERNEL_CACHE=/tmp/kc_$b .ab/conflux_$b perf "$f" --fp16 --batch 32 --tune none \
            --quiet -t 4 >"$OUT/perf_${m}_$b.log" 2>&1
        echo "$m $b: $(grep -E '^latency' "$OUT/perf_${m}_$b.log")"
    done
    grep -A5 " share " "$OUT/perf_${m}_a.log" | sed "s/^/  a /"
    grep -A5 " share " "$OUT/perf_${m}_b.log" | sed "s/^/  b /"
    CONFLUX_KERNEL_CACHE=/tmp/kc_b .ab/conflux_b verify "$f" --fp16 --batch 2 --tune none --quiet \
        >"$OUT/verify_${m}.log" 2>&1
    echo "$m verify --fp16 batch 2 (b): $(tail -1 "$OUT/verify_${m}.log")"
done
python3 - <<'PY'
import torch, torchvision.models as tvm
torch.backends.cudnn.benchmark = True
for name in ["convnext_tiny", "mobilenet_v2", "efficientnet_b0"]:
    m = getattr(tvm, name)().eval().half().cuda().to(memory_format=torch.channels_last)
    x = torch.randn(32, 3, 224, 224, device="cuda", dtype=torch.half).to(
        memory_format=torch.channels_last)
    with torch.no_grad():
        for _ in range(10): m(x)
        torch.cuda.synchronize()
        times = []
        for _ in range(30):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record(); m(x); e.record(); e.synchronize(); times.append(s.elapsed_time(e))
    times.sort()
    print(f"{name} torch eager f16 channels-last batch 32: median {times[len(times)//2]:.3f} ms")
PY
