#!/usr/bin/env bash
# One device call: Conflux's generated f16/bf16 gemms at 4096^3 and 8192^3 (the best-ranked
# candidate configs, heuristic order, wgmma and mma.sync side by side) and torch.matmul
# (cuBLAS) on the same sizes in the same call. `gemm_vs_torch.sh shapes`: instead, every
# candidate on the transformer zoo's GEMM shapes at batch 32, and torch.matmul on each.
# `gemm_vs_torch.sh tma`: the _tma forms' correctness over the generator's harness cases, then
# the first candidates and the _tma forms timed on four zoo shapes, 4096^3 and 8192^3 (and
# those two in bf16), with torch.matmul on each.
# Build and pack first with `scripts/gpu_suite.sh pack`.
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/device_env.sh
date -u +"%Y-%m-%d %H:%M UTC"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
if [ "${1:-}" = tma ]; then
    timeout -s KILL "${TMA_LIMIT:-400}" .gpu/bin/gpu_gemm_kernel_test tma
    for s in 4096x3072x768 4096x768x3072 4096x768x768 6304x2304x768 4096 8192; do
        python3 bench/torch_matmul.py $s f16
    done
    for s in 4096 8192; do python3 bench/torch_matmul.py $s bf16; done
    exit 0
fi
if [ "${1:-}" = shapes ]; then
    .gpu/bin/gpu_gemm_kernel_test shapes
    for s in 4096x3072x768 4096x768x3072 4096x768x768 6304x2304x768 6304x768x768 100352x384x96; do
        python3 bench/torch_matmul.py $s f16
    done
    exit 0
fi
for n in 4096 8192; do
    for t in f16 bf16; do python3 bench/torch_matmul.py $n $t; done
done
.gpu/bin/gpu_gemm_kernel_test time
for n in 4096 8192; do
    for t in f16 bf16; do python3 bench/torch_matmul.py $n $t; done
done
