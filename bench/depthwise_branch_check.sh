#!/usr/bin/env bash
# One device call that decides whether a depthwise kernel change lands: the A/B of several
# conflux binaries on the depthwise layers (bench/depthwise_configs_ab.sh, round 1 of all, then
# round 2 when time is left), the sigmoid A/B of bench/sigmoid_ab.sh, the generator harness's
# depthwise cases and the zoo's models (cuda vs onnxruntime) with the pack's binaries, and the
# repo models plus the ONNX tests of the importer's newer ops on the CUDA target. Here:
# `scripts/gpu_suite.sh pack` on the branch to land, the other binaries (stripped) under
# .gpu/ab/NAME/conflux, packed as .gpu/ab.txz; then run it with carry [".gpu"]:
#   bench/depthwise_branch_check.sh NAME...   (the .gpu/ab names in A/B order; the pack's
#                                             binary is timed last)
# About 9 minutes with two binaries (the harness alone compiles for about 6: 19 cases of 70-145
# configs each; each binary's A/B round is about 45 s). Logs under $OUT: device.txt, ab.txt,
# sigmoid_ab.txt, dw_harness.txt, zoo_conformance.txt, new_ops_cuda.txt.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
. bench/device_env.sh
F=$OUT
mkdir -p .gpu/ab && tar xJf .gpu/ab.txz -C .gpu/ab
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$F/device.txt"
echo "pack $(cat .gpu/COMMIT)" | tee -a "$F/device.txt"
export CONFLUX_KERNEL_CACHE=/tmp/conflux-kernels
start=$SECONDS
bins=()
for name in "$@"; do bins+=(".gpu/ab/$name/conflux"); done
bins+=(.gpu/bin/conflux)
round() { # bench/depthwise_configs_ab.sh's layers and configs, one round of every binary
    DW_ROUNDS=$1 timeout $((80 * ${#bins[@]})) bench/depthwise_configs_ab.sh "${bins[@]}" \
        >>"$F/ab.txt" 2>&1
    echo "ab round $1 done after $((SECONDS - start)) s" | tee -a "$F/ab.txt"
}
round 1
# The binaries' sigmoid in 16-bit epilogues (bench/sigmoid_ab.sh: EfficientNet's expand
# convolutions with SiLU, one fixed config), about 40 s.
timeout 90 bench/sigmoid_ab.sh "${bins[@]}" >"$F/sigmoid_ab.txt" 2>&1
echo "sigmoid A/B rc=$? after $((SECONDS - start)) s" | tee -a "$F/sigmoid_ab.txt"
timeout -s KILL 420 .gpu/bin/gpu_gemm_kernel_test check depthwise >"$F/dw_harness.txt" 2>&1
echo "harness rc=$? after $((SECONDS - start)) s" | tee -a "$F/dw_harness.txt"
grep -E "FAIL|gemm configs" "$F/dw_harness.txt" | tail -5
timeout -s KILL 100 .gpu/bin/onnx_conformance --target cuda -j 8 --min-passed 56 tests/zoo/data \
    >"$F/zoo_conformance.txt" 2>&1
echo "zoo conformance rc=$? after $((SECONDS - start)) s" | tee -a "$F/zoo_conformance.txt"
tail -4 "$F/zoo_conformance.txt"
D=/tmp/onnx-testdata && mkdir -p $D && tar xJf .gpu/testdata.txz -C $D
new_ops=$(ls -d $D/node/test_eyelike* $D/node/test_upsample* $D/node/test_lrn* $D/node/test_onehot* \
    $D/node/test_hardmax* $D/node/test_shrink* $D/node/test_gridsample* $D/node/test_mvn* $D/node/test_*quantizelinear* $D/node/test_dft*)
timeout -s KILL 120 .gpu/bin/onnx_conformance --target cuda tests/models/data $new_ops \
    >"$F/new_ops_cuda.txt" 2>&1
echo "repo models + newer ops, cuda: rc=$? after $((SECONDS - start)) s" | tee -a "$F/new_ops_cuda.txt"
tail -4 "$F/new_ops_cuda.txt"
[ $((SECONDS - start)) -lt 440 ] && round 2
cat "$F/ab.txt"
