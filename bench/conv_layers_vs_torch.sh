#!/usr/bin/env bash
# One device call: ResNet-50's conv layers (batch 256, f16, NHWC) through Conflux, each alone and
# fused with bias + residual + relu, against PyTorch eager (cuDNN) before and after, then the
# comparison table, the issue's targets and a SASS check of the winning kernels. Build and pack
# first with `scripts/gpu_suite.sh pack` (carry .gpu); run from anywhere, it works from the
# repository root.
#   bench/conv_layers_vs_torch.sh [CONFIGS [LAYERS [EXTRA]]]   defaults: 4 configs, all layers;
#   EXTRA: configs forced besides the candidates, comma-separated (e.g. the _wgmma_pp form)
# Logs and JSON lines go to $OUT (a temporary directory when unset).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
. bench/device_env.sh
configs=${1:-4}
layers=${2:-all}
extra=${3:-}
work=$(mktemp -d)
packed conflux_bench_conv_layers

date -u +"%Y-%m-%d %H:%M UTC"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
$bin --list --layers "$layers" >"$work/layers.json" || exit 2
echo "== torch (1)"
python3 bench/torch_conv_layers.py "$work/layers.json" >"$OUT/torch1.jsonl" 2>"$OUT/torch1.log" ||
    { tail -5 "$OUT/torch1.log"; exit 1; }
echo "== conflux ($configs configs)"
start=$SECONDS
# The kernel cache outlives the call on a warm machine, so a second call skips NVRTC.
$bin --layers "$layers" --configs "$configs" ${extra:+--extra-configs "$extra"} \
    --kernel-cache /tmp/conflux-kernels \
    --dump-cubins "$work/cubins" >"$OUT/conflux.out" 2>"$OUT/conflux.log"
rc=$?
echo "conflux bench: exit $rc, $((SECONDS - start)) s"
[ $rc = 0 ] || tail -5 "$OUT/conflux.log"
echo "== torch (2)"
python3 bench/torch_conv_layers.py "$work/layers.json" >"$OUT/torch2.jsonl" 2>"$OUT/torch2.log" ||
    tail -5 "$OUT/torch2.log"
echo
grep '^trace .*(heuristic)' "$OUT/conflux.out"
sed -n '/^layer /,$p' "$OUT/conflux.out"
echo
python3 bench/compare_conv_layers.py --conflux "$OUT/conflux.out" \
    --torch "$OUT/torch1.jsonl" "$OUT/torch2.jsonl" --cubins "$work/cubins" \
    --cuobjdump /usr/local/cuda/bin/cuobjdump | tee "$OUT/compare.txt"
rm -rf "$work"
exit $rc
