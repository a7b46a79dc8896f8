#!/usr/bin/env bash
# Installs everything Conflux needs to build and test on Debian 12 (bookworm).
set -euo pipefail

packages=(
  build-essential cmake ninja-build git clang-format
  protobuf-compiler libprotobuf-dev libonnx-dev
  nlohmann-json3-dev libcli11-dev libsqlite3-dev
  libgtest-dev googletest
  libonnx-testdata
)

sudo=()
if [ "$(id -u)" -ne 0 ]; then
  sudo=(sudo)
fi

export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update
"${sudo[@]}" apt-get install -y --no-install-recommends "${packages[@]}"
