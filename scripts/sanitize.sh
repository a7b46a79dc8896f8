#!/usr/bin/env bash
# The sanitizer and fuzzing run (CI calls it after scripts/test.sh):
#   1. one clang build in build-asan with ASan + UBSan and libFuzzer instrumentation
#      (cmake/sanitizers.cmake), serving both the tests and the fuzz targets;
#   2. the non-GPU tests under it (ctest -LE gpu), minus two whose time is NVRTC's (named
#      below);
#   3. every fuzz target for FUZZ_SECONDS (default 30) from its committed corpus, FUZZ_PARALLEL
#      (default 2) targets at a time, each with FUZZ_FORK libFuzzer worker processes (default 0:
#      the target runs in one process).
# About 10 minutes on two cores, which keeps the whole of .ci/run near 20.
# Any sanitizer report, test failure or fuzzer finding fails the run; a fuzzer's crashing input
# is kept under build-asan/fuzz/<target>/artifacts/ (copy it to tests/fuzz/regressions/<target>/
# once fixed: the fuzz_replay tests run those files).
#
# Usage: scripts/sanitize.sh [build|test|fuzz]...   (default: all three in order)
# Environment: FUZZ_SECONDS, FUZZ_TARGETS (space-separated subset), FUZZ_PARALLEL, FUZZ_FORK,
# FUZZ_BIN (the fuzz binaries' folder, default build-asan/bin: a long run on another machine
# carries them), FUZZ_OUT (logs, new inputs and findings; default build-asan/fuzz), JOBS
# (default 2).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
build=build-asan
jobs=${JOBS:-2}
fuzz_seconds=${FUZZ_SECONDS:-30}
fuzz_targets=${FUZZ_TARGETS:-"onnx_import npy cache_import perf_config cfx_load"}
fuzz_parallel=${FUZZ_PARALLEL:-2}
fuzz_fork=${FUZZ_FORK:-0}
fuzz_bin=${FUZZ_BIN:-$build/bin}
fuzz_out=${FUZZ_OUT:-$build/fuzz}

# Reports end the process (exit code != 0) with a symbolized stack.
export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:abort_on_error=1:detect_leaks=1:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
symbolizer=$(command -v llvm-symbolizer || command -v llvm-symbolizer-14 || true)
if [ -n "$symbolizer" ]; then export ASAN_SYMBOLIZER_PATH=$symbolizer; fi

seconds_since() { echo $(($(date +%s) - $1)); }

do_build() {
  local start=$(date +%s)
  # Without the Python extension: an instrumented module cannot load into an uninstrumented
  # interpreter (the ASan runtime must come first); scripts/test.sh tests it.
  CC=clang CXX=clang++ cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCONFLUX_FUZZ=ON -DCONFLUX_PYTHON=OFF \
    -DCMAKE_UNITY_BUILD=ON -DCONFLUX_TEST_KERNEL_CACHE="$root/build/kernel-cache"
  # What the tests and fuzzing below run; not the GPU tests (no device in CI) nor the benchmarks.
  cmake --build "$build" -j "$jobs" --target conflux_tool unit_tests property_tests \
    onnx_conformance conformance_compare_test npy_compare \
    $(for t in $fuzz_targets; do echo "fuzz_$t"; done)
  echo "sanitize.sh: build took $(seconds_since "$start") s"
}

do_test() {
  local start=$(date +%s)
  # Every test but the GPU ones (no device), the formatting check (scripts/test.sh has it) and
  # two NVRTC-bound ones: every fused pattern compiled with every candidate config (7 of its 8
  # minutes here are NVRTC, which is not instrumented; the generators it drives are, and run
  # under onnx_conformance_cuda_compile and the codegen unit tests), and every candidate config
  # of the generator alone; and the model zoo compiled for sm_90 (NVRTC again: its generators
  # run instrumented under onnx_conformance_cuda_compile); and the host emulation of generated
  # kernels (the kernels run in a library the host compiler builds uninstrumented; the passes,
  # lowering and generators it drives run instrumented in the other tests).
  local skip='^(clang_format|CudaFusedGemmMatrix\.EveryPatternAndEveryCandidateConfigCompilesForSm90|CudaGemmKernel\.CandidateConfigsCompileWithNvrtc|zoo_cuda_compile|CudaKernelEmulation\..*)$'
  (cd "$build" && ctest --output-on-failure -j "$jobs" -LE gpu -E "$skip")
  echo "sanitize.sh: tests took $(seconds_since "$start") s"
}

# Runs one target for fuzz_seconds; the committed corpus is read only, new inputs go to a
# scratch folder. Returns non-zero on any finding.
fuzz_one() {
  local target=$1 dir="$fuzz_out/$1"
  rm -rf "$dir"
  mkdir -p "$dir/corpus" "$dir/artifacts"
  local seeds=("tests/fuzz/corpus/$target")
  local extra=()
  if ((fuzz_fork > 0)); then extra+=(-fork="$fuzz_fork"); fi
  if [ "$target" = onnx_import ]; then
    extra+=(-dict=tests/fuzz/onnx.dict)
    # Debian's ONNX backend-test models (installed by setup.sh) are seeds too: ~1000 small
    # models covering every op.
    local testdata=${ONNX_TESTDATA:-/usr/share/libonnx-testdata/data}/node
    if [ -d "$testdata" ]; then
      mkdir -p "$dir/onnx-testdata"
      find "$testdata" -name model.onnx -size -4k | while read -r m; do
        cp "$m" "$dir/onnx-testdata/$(basename "$(dirname "$m")").onnx"
      done
      seeds+=("$dir/onnx-testdata")
    fi
  fi
  if "$fuzz_bin/fuzz_$target" -max_total_time="$fuzz_seconds" -timeout=10 -rss_limit_mb=2048 \
    -max_len=16384 -print_final_stats=1 -artifact_prefix="$dir/artifacts/" "${extra[@]}" \
    "$dir/corpus" "${seeds[@]}" >"$dir/log" 2>&1; then
    # One process prints its final stats; fork mode's last status line counts every worker's.
    local runs
    runs=$(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$dir/log" | grep -o '[0-9]*$' ||
      grep -o '^#[0-9]*' "$dir/log" | tail -1 | tr -d '#')
    echo "sanitize.sh: fuzz_$target: $runs executions in $fuzz_seconds s ($((fuzz_fork > 0 ? fuzz_fork : 1)) process(es)), no finding"
  else
    echo "sanitize.sh: fuzz_$target FOUND A PROBLEM; its input is in $dir/artifacts/:" >&2
    ls -l "$dir/artifacts" >&2
    tail -n 60 "$dir/log" >&2
    return 1
  fi
}

do_fuzz() {
  local start=$(date +%s) failed=0 pids=() targets=($fuzz_targets) i j
  # FUZZ_PARALLEL at a time (two by default: CI's machine has two cores).
  for ((i = 0; i < ${#targets[@]}; i += fuzz_parallel)); do
    pids=()
    for ((j = i; j < i + fuzz_parallel && j < ${#targets[@]}; ++j)); do
      fuzz_one "${targets[j]}" &
      pids+=($!)
    done
    for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
  done
  echo "sanitize.sh: fuzzing took $(seconds_since "$start") s"
  return $failed
}

steps=("$@")
if [ ${#steps[@]} -eq 0 ]; then steps=(build test fuzz); fi
for step in "${steps[@]}"; do
  case $step in
  build) do_build ;;
  test) do_test ;;
  fuzz) do_fuzz ;;
  *)
    echo "usage: $0 [build|test|fuzz]..." >&2
    exit 2
    ;;
  esac
done
echo "sanitize.sh: ${steps[*]}: no failure"
