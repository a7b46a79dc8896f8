#!/usr/bin/env bash
# Builds Conflux and runs the bundled example model (conv + bias + relu + transpose + reshape)
# on random inputs.
set -euo pipefail
cd "$(dirname "$0")/.."

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build --target conflux_tool
build/bin/conflux run examples/conv_block.onnx
