#!/usr/bin/env bash
# One device call: torchvision ResNet-50 and a BERT-base-sized transformer encoder (random
# weights, f16), exported to ONNX here, then per batch size: `conflux perf` (tuned, one CUDA
# graph per run), PyTorch eager and torch.compile (default mode) in the same call, and Conflux's
# output checked against PyTorch's on the same input. Build and pack first with
# `scripts/gpu_suite.sh pack` (carry .gpu). Logs and JSON lines go to $OUT.
#   bench/models_vs_torch.sh [RESNET_BATCHES [ENCODER_BATCHES]]   defaults "1 32 256" "1 32"
# COMMIT names the record (default: what the pack was built from, .gpu/COMMIT).
# CONFLUX_ARGS adds options to conflux perf and run (e.g. "--perf-config
# 128x128x64_w8x1_s4_k1_wgmma_pp" to force a config that is not a tuning candidate, or
# "--skip-pass pad_conv_channels"); give it a problem cache of its own (bench/.cache is shared).
# TUNE=none|quick|exhaustive (default quick) is passed to conflux; tuning a batch size from cold
# caches takes a minute or more (ResNet-50), so from cold caches the whole default run needs
# more than one 10-minute call: give the batch sizes in parts ("" for none). The problem cache is
# kept between calls: it is read from bench/.cache/problems.sqlite when that exists (carry
# bench/.cache) and written back to $OUT/problems.sqlite. With it warm, the whole default run
# takes about 5 minutes.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
. bench/device_env.sh
packed conflux
resnet_batches=${1-"1 32 256"} # "" runs none
encoder_batches=${2-"1 32"}
work=$(mktemp -d)
[ -f bench/.cache/problems.sqlite ] && cp bench/.cache/problems.sqlite "$work/problems.sqlite" &&
    chmod u+w "$work/problems.sqlite"
caches=(--problem-cache "$work/problems.sqlite" --kernel-cache "$work/kernels")
date -u +"%Y-%m-%d %H:%M UTC"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
models=()
[ -n "$resnet_batches" ] && models+=(resnet50)
[ -n "$encoder_batches" ] && models+=(encoder)
[ ${#models[@]} = 0 ] ||
    python3 bench/torch_models.py export "$work" "${models[@]}" 2>&1 | grep -v Warning | tail -3

for model in "${models[@]}"; do
    [ -f "$work/$model.onnx" ] || { echo "$model: not exported"; continue; }
    batches=$resnet_batches
    [ $model = encoder ] && batches=$encoder_batches
    for b in $batches; do
        echo "== $model batch $b"
        python3 bench/torch_models.py time $model "$b" | tee -a "$OUT/torch.jsonl"
        # shellcheck disable=SC2086 # CONFLUX_ARGS: words for conflux perf (and run)
        $bin perf "$work/$model.onnx" --batch "$b" "${caches[@]}" --tune "${TUNE:-quick}" -n 30 -t 5 --quiet ${CONFLUX_ARGS:-} \
            >"$OUT/perf_${model}_$b.txt" 2>&1
        echo "conflux perf: exit $?"
        cp "$work/problems.sqlite" "$OUT/problems.sqlite" 2>/dev/null # kept even if the call runs out
        grep -E "^(latency|without|throughput|device)|error" "$OUT/perf_${model}_$b.txt"
        d="$work/check_${model}_$b"
        mkdir -p "$d"
        python3 bench/torch_models.py reference $model "$b" "$d" &&
            $bin run "$work/$model.onnx" --batch "$b" --input "input=$d/input.npy" ${CONFLUX_ARGS:-} \
                --output-dir "$d/out" "${caches[@]}" --quiet >"$OUT/run_${model}_$b.txt" 2>&1 &&
            python3 - "$d" <<'PY'
import sys, glob, numpy as np
d = sys.argv[1]
got = np.load(glob.glob(f"{d}/out/*.npy")[0]).astype(np.float64)
want = np.load(f"{d}/torch.npy").astype(np.float64)
rel = np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30)
print(f"conflux vs torch output: relative RMS {rel:.3g}, max |diff| {np.abs(got - want).max():.3g}"
      f" -> {'pass' if rel < 2e-2 else 'FAIL'} (f16 tolerance 2e-2)")
PY
        [ $? = 0 ] || { echo "correctness check failed:"; tail -3 "$OUT/run_${model}_$b.txt"; }
    done
done
rm -rf "$work"
# One JSON record of this run (copy it to bench/results/DATE_models.json; bench/compare
# prints what got worse against the previous one).
python3 bench/collect_models.py "$OUT" "${COMMIT:-$(cat .gpu/COMMIT 2>/dev/null || echo unknown)}" \
    "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)" >"$OUT/models.json" &&
    echo "record: $OUT/models.json"
