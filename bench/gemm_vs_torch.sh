#!/usr/bin/env bash
# One device call: Conflux's generated f16 4096^3 gemm (every candidate config, heuristic order)
# and torch.matmul in the same call. Build and pack first with `scripts/gpu_suite.sh pack`.
set -uo pipefail
cd "$(dirname "$0")/.."
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
date -u +"%Y-%m-%d %H:%M UTC"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 bench/torch_matmul.py 4096
.gpu/bin/gpu_gemm_kernel_test time
python3 bench/torch_matmul.py 4096
