#!/usr/bin/env bash
# On a GPU (scripts/gpu_suite.sh runs it): a model compiled and saved as a .cfx, then loaded and
# run by a new process, gives outputs bit-identical to a process that compiled the same program
# (--tune none: the heuristic's configs, the same in both); a .cfx compiled for another
# architecture is refused with exit 2 naming both. Prints the load time and the first run's.
#   scripts/cfx_round_trip.sh CONFLUX MODEL.onnx [compile options...]
set -uo pipefail
conflux=$1 model=$2
shift 2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$conflux" run --target cuda "$model" --tune none "$@" --output-dir "$work/compiled" >"$work/run1.txt" 2>&1 ||
    { cat "$work/run1.txt"; fail "run of the model"; }
"$conflux" compile --target cuda "$model" --tune none "$@" -o "$work/model.cfx" >"$work/compile.txt" 2>&1 ||
    { cat "$work/compile.txt"; fail "compile -o"; }
grep "saved the program" "$work/compile.txt"
"$conflux" run "$work/model.cfx" --output-dir "$work/loaded" >"$work/run2.txt" 2>&1 ||
    { cat "$work/run2.txt"; fail "run of the .cfx"; }
grep -E "loaded|^time" "$work/run2.txt"
n=0
for a in "$work"/compiled/*.npy; do
    cmp -s "$a" "$work/loaded/$(basename "$a")" || fail "$(basename "$a") differs between the processes"
    n=$((n + 1))
done
[ "$n" -gt 0 ] || fail "no outputs written"
echo "$n outputs bit-identical"

other=sm_80
"$conflux" compile --target cuda --arch $other "$model" --tune none "$@" -o "$work/other.cfx" >/dev/null 2>&1 ||
    fail "compile --arch $other"
"$conflux" run "$work/other.cfx" >"$work/run3.txt" 2>&1
rc=$?
[ $rc = 2 ] && grep -q "compiled for $other but device 0" "$work/run3.txt" ||
    { cat "$work/run3.txt"; fail "a .cfx for $other: exit $rc, expected 2 naming the architecture"; }
echo "a .cfx for $other refused: $(grep error "$work/run3.txt")"
echo "cfx round trip: pass"
