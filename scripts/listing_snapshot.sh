#!/usr/bin/env bash
# Behaviour-unchanged check for refactors of the compiler: what `conflux compile --target cuda`
# decides for a set of models (launches, memory plan, configs, splits) and the exact source of
# every kernel it generates.
#
#   scripts/listing_snapshot.sh save  DIR [MODEL...]   record with build/bin/conflux
#   scripts/listing_snapshot.sh check DIR [MODEL...]   compare build/bin/conflux with DIR
#
# The listings are compared as text (the compile-time line left out). Kernel sources are compared
# through the kernel cache: `save` fills DIR/kernels, whose keys include each kernel's complete
# source, and `check` compiles against a copy of it; every kernel must be found there, so a
# single changed byte of a generated kernel shows as a miss. Default models: the repository's
# models and examples, and (when present) ResNet-50-shaped models at batch 1 and 32 made by
# bench/make_resnet50.py in /tmp, in f32 and --fp16. Needs no GPU: tuning is off (--tune none)
# and the problem cache is a fresh file.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-}
dir=${2:-}
if [ -z "$mode" ] || [ -z "$dir" ]; then
  sed -n 2,14p "$0" >&2
  exit 2
fi
shift 2
conflux=${CONFLUX:-build/bin/conflux}

models=("$@")
if [ ${#models[@]} -eq 0 ]; then
  models=(examples/*.onnx tests/models/data/*/model.onnx)
  for m in /tmp/resnet50.onnx /tmp/resnet50_b32.onnx; do
    if [ -f "$m" ]; then models+=("$m"); fi
  done
fi

name_of() { # a file name for a model path: tests/models/data/x/model.onnx -> x
  local m=$1
  if [ "$(basename "$m")" = model.onnx ]; then basename "$(dirname "$m")"; else basename "$m" .onnx; fi
}

mkdir -p "$dir"
kernels="$dir/kernels"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
if [ "$mode" = check ]; then
  # A copy, so that the check's own compiles cannot add what was missing.
  mkdir -m 700 "$scratch/kernels"
  cp -a "$kernels/." "$scratch/kernels/"
  kernels="$scratch/kernels"
else
  rm -rf "$kernels"
  mkdir -m 700 "$kernels"
fi

failed=0
for m in "${models[@]}"; do
  for precision in "" --fp16; do
    label="$(name_of "$m")${precision:+_fp16}"
    out="$scratch/$label.txt"
    if ! "$conflux" compile --target cuda --tune none --quiet $precision --kernel-cache "$kernels" \
      --problem-cache "$scratch/problems_$label.sqlite" "$m" >"$out.raw" 2>&1; then
      echo "$label: compile failed:" >&2
      tail -n 5 "$out.raw" >&2
      failed=1
      continue
    fi
    grep -v '^compiled [0-9]* kernels for' "$out.raw" >"$out"
    summary=$(grep -m1 '^compiled [0-9]* kernels for' "$out.raw" || true)
    if [ "$mode" = save ]; then
      cp "$out" "$dir/$label.txt"
      echo "$label: saved ($summary)"
    elif ! diff -u "$dir/$label.txt" "$out" >"$scratch/$label.diff"; then
      echo "$label: LISTING DIFFERS" >&2
      head -n 40 "$scratch/$label.diff" >&2
      failed=1
    else
      # "compiled N kernels for sm_90 in T s (H from the kernel cache)": every kernel a hit.
      total=$(sed -n 's/^compiled \([0-9]*\) kernels.*/\1/p' <<<"$summary")
      hits=$(sed -n 's/.*(\([0-9]*\) from the kernel cache).*/\1/p' <<<"$summary")
      if [ "${hits:-0}" != "$total" ]; then
        echo "$label: listing equal, but $((total - ${hits:-0})) of $total kernel sources differ" >&2
        failed=1
      else
        echo "$label: identical ($total kernels)"
      fi
    fi
  done
done
exit $failed
