#!/usr/bin/env bash
# Sigmoid in 16-bit epilogues, A/B of conflux binaries in one device call: EfficientNet-B0's
# expand convolutions (bench/expand_conv_models.py: e1 16->96 and e2 24->144 with bias + SiLU,
# e8 = e1 with bias only, the floor SiLU's arithmetic adds to) compiled with one fixed config
# (the tuner's pick on the H100 for e1, 12-04b) and timed by `conflux perf`, two rounds with the
# binaries alternating. Run there (the models are written on the device):
#   bench/sigmoid_ab.sh BIN...        e.g. .gpu/ab/fa00dc6/conflux .gpu/bin/conflux
# Prints each run's top kernels (the expand convolution is the largest launch).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
dir=${SIGMOID_AB_DIR:-/tmp/conflux-sigmoid-ab}
if ! python3 bench/expand_conv_models.py "$dir" >/dev/null; then
    echo "sigmoid_ab: could not write the models into $dir" >&2
    exit 2
fi
config=${SIGMOID_AB_CONFIG:-64x32x32_w2x1_s3_k1}
for round in 1 2; do
    for bin in "$@"; do
        for e in e1 e8 e2; do
            echo "== round $round, $bin, $e ($config)"
            "$bin" perf "$dir/$e.onnx" --fp16 --tune none --perf-config "$config" --top 3 2>&1 |
                grep -vE "^(compil|tun)" | tail -6
        done
    done
done
