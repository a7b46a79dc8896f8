#!/usr/bin/env bash
# Fails when a tracked C++ file differs from the committed .clang-format style.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.cpp' '*.hpp' '*.h' 2>/dev/null || find include src tools tests -name '*.[ch]pp')
clang-format --dry-run -Werror "${files[@]}"
echo "${#files[@]} files formatted"
