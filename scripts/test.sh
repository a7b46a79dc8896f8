#!/usr/bin/env bash
# Builds Conflux and runs every test: unit, ONNX conformance and the end-to-end model tests.
set -euo pipefail
cd "$(dirname "$0")/.."

# A unity build (sources compiled in batches; tests file by file): a third of the CPU time.
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_UNITY_BUILD=ON
cmake --build build
cd build
ctest --output-on-failure -j2
