#!/usr/bin/env bash
# Conflux binaries on the same depthwise layers and configs, alternating, two rounds each
# (bench/depthwise_configs.py: b32, f16 in and out with bias, --tune none --perf-config), so a
# kernel change is timed against its base in one device call. On the GPU machine, from the
# repository root:
#   bench/depthwise_configs_ab.sh BASE_CONFLUX NEW_CONFLUX [MORE_CONFLUX...]
# DW_ROUNDS (default "1 2") names the rounds to run (bench/depthwise_branch_check.sh runs them
# apart). DW_CONFIGS and DW_LAYERS (comma-separated) replace the defaults: the pipelined tensor-core
# configs the heuristic ranks first on these layers, and ConvNeXt-tiny's 7x7 56x56x96 and
# 14x14x384, MobileNetV2's 3x3 112x112x32 and 56x56x144 and EfficientNet-B0's 5x5 28x28x240
# layers. Prints each binary's table per round; about 45 s a binary and round.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
[ $# -ge 2 ] || { echo "usage: $0 BASE_CONFLUX NEW_CONFLUX [MORE_CONFLUX...]" >&2; exit 2; }
configs=${DW_CONFIGS:-dw_mma_c16_r8_w64_t256_p,dw_mma_c16_r16_w32_t256_p,dw_mma_c16_r16_w16_t256_p}
layers=${DW_LAYERS:-32x56x56x96k7s1,32x14x14x384k7s1,32x112x112x32k3s1,32x28x28x240k5s1,32x56x56x144k3s1}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
for round in ${DW_ROUNDS:-1 2}; do
    for b in "$@"; do
        echo "== $b, round $round"
        python3 bench/depthwise_configs.py "$b" --configs "$configs" --layers "$layers"
    done
done
