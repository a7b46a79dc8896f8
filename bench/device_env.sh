# Sourced by the bench scripts that run on the GPU machine: the CUDA libraries on the path, $OUT
# (a temporary directory when unset) created, and `packed NAME` which sets $bin to the packed
# binary .gpu/bin/NAME or stops with how to get it. Run from the repository root.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
packed() {
    bin=.gpu/bin/$1
    [ -x "$bin" ] || { echo "no $bin: run scripts/gpu_suite.sh pack first" >&2; exit 2; }
}
