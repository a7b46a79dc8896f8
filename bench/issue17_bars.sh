#!/usr/bin/env bash
# Issue 17's four bars in one device call (about 9 minutes on a warm problem cache): ResNet-50's
# conv layers at batch 256 (conv alone against cuDNN, conv + bias + residual + relu against
# eager's unfused time, the winners' SASS), then ResNet-50 f16 at batch 256 and the encoder at
# batch 32 against torch.compile(mode="reduce-overhead"). The GEMM bar has its own script
# (bench/gemm_vs_torch.sh). Here: `scripts/gpu_suite.sh pack`, then run it with
# carry [".gpu", "bench/.cache"]:
#   bench/issue17_bars.sh
# When bench/.cache/problems.sqlite is absent, the H200's tuned ResNet-50 entries of 2026-12-06h
# seed it, so the models' step does not spend the call tuning. Logs under $OUT: device.txt,
# conv_layers.txt, models.txt, res.tgz (each step's own logs and JSON lines).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
. bench/device_env.sh
final=$OUT
seed=bench/results/2026-12-06h_problems_resnet50_b256_h200.sqlite
if [ ! -f bench/.cache/problems.sqlite ] && [ -f $seed ]; then
    mkdir -p bench/.cache && cp $seed bench/.cache/problems.sqlite && chmod u+w bench/.cache/problems.sqlite
fi
steps=$(mktemp -d)
{
    nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
    python3 -c "import torch; print('torch', torch.__version__)"
    echo "pack $(cat .gpu/COMMIT 2>/dev/null)"
} | tee "$final/device.txt"
start=$SECONDS
OUT=$steps/conv timeout "${CONV_SECONDS:-300}" bench/conv_layers_vs_torch.sh 4 all >"$final/conv_layers.txt" 2>&1
echo "conv layers: rc=$? after $((SECONDS - start)) s" | tee -a "$final/device.txt"
OUT=$steps/models timeout "$((${CALL_SECONDS:-560} - (SECONDS - start)))" \
    bench/models_vs_torch.sh "256" "32" >"$final/models.txt" 2>&1
echo "models: rc=$? after $((SECONDS - start)) s" | tee -a "$final/device.txt"
tar czf "$final/res.tgz" -C "$steps" . 2>/dev/null
tail -30 "$final/conv_layers.txt"
tail -25 "$final/models.txt"
