# Sourced by the bench scripts that run on the GPU machine (and scripts/gpu_suite.sh run): the
# CUDA libraries on the path, the pack unpacked, $OUT (a temporary directory when unset) created,
# and `packed NAME` which sets $bin to the packed binary .gpu/bin/NAME or stops with how to get
# it. Run from the repository root.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# The pack travels compressed (scripts/gpu_suite.sh pack writes .gpu/pack.txz: the binaries,
# test data and Python package are over the device tool's 64 MiB carry limit uncompressed); the
# first script on the machine unpacks it.
[ -d .gpu/bin ] || [ ! -f .gpu/pack.txz ] || tar xJf .gpu/pack.txz -C .gpu
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
packed() {
    bin=.gpu/bin/$1
    [ -x "$bin" ] || { echo "no $bin: run scripts/gpu_suite.sh pack first" >&2; exit 2; }
}
