#!/usr/bin/env bash
# Builds Conflux and runs every test: unit, ONNX conformance and the end-to-end model tests.
set -euo pipefail
cd "$(dirname "$0")/.."

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build
cd build
ctest --output-on-failure -j2
