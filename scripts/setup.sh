#!/usr/bin/env bash
# Installs everything Conflux needs to build and test on Debian 12 (bookworm).
set -euo pipefail

packages=(
  build-essential cmake ninja-build git clang-format
  protobuf-compiler libprotobuf-dev libonnx-dev
  nlohmann-json3-dev libcli11-dev libsqlite3-dev libxxhash-dev
  libgtest-dev googletest
  libonnx-testdata
  # The Python package (python/): Python's headers, pybind11, venv for `pip install .`, and what
  # its tests import.
  python3-dev python3-venv pybind11-dev libdlpack-dev python3-pytest python3-numpy python3-onnx
  # scripts/sanitize.sh: clang with its sanitizer and libFuzzer runtimes, and llvm-symbolizer
  # for readable sanitizer stacks.
  clang libclang-rt-14-dev llvm
)

sudo=()
if [ "$(id -u)" -ne 0 ]; then
  sudo=(sudo)
fi

export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update
"${sudo[@]}" apt-get install -y --no-install-recommends "${packages[@]}"

# The CUDA toolkit (NVRTC and the static CUDA runtime, 12.0 or newer) comes with this machine
# kind under /usr/local/cuda; Debian's own nvidia-cuda-toolkit (11.8, non-free) is too old for
# the runtime calls Conflux uses. No GPU or driver is needed to build and test.
if ! command -v nvcc >/dev/null 2>&1 && [ ! -x /usr/local/cuda/bin/nvcc ]; then
  echo "setup.sh: the CUDA toolkit (12.0 or newer) was not found at /usr/local/cuda or on PATH;" >&2
  echo "          install it from NVIDIA's CUDA repository for Debian 12, then run this again" >&2
  exit 1
fi

# The tests run the `python3` first on PATH. Debian's has pytest, numpy and onnx from the packages
# above; another one (pyenv, a virtual environment) gets them from PyPI.
if ! python3 -c "import pytest, numpy, onnx" >/dev/null 2>&1; then
  python3 -m pip install --quiet pytest numpy onnx
fi
