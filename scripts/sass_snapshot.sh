#!/usr/bin/env bash
# Machine-code check for refactors that change the text of generated GEMM kernels but should not
# change what they compile to (moving kernel structure into device templates): the SASS of every
# GEMM kernel of a set of models, each compiled with every config in CONFIGS, f32 and --fp16.
#
#   scripts/sass_snapshot.sh save    DIR [MODEL...]   record with build/bin/conflux
#   scripts/sass_snapshot.sh compare DIR DIR2          after a second `save` into DIR2
#
# `compare` counts the kernels whose SASS is byte-identical, the same instructions up to register
# names and order, and the rest, and names the model/config/precision of each of the rest (read
# them with diff). Needs no GPU; needs cuobjdump (CUOBJDUMP, else on PATH; without a CUDA
# toolkit: `pip download nvidia-cuda-cuobjdump` and unzip it). scripts/listing_snapshot.sh
# checks that the kernel text itself is unchanged.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-}
dir=${2:-}
if [ -z "$mode" ] || [ -z "$dir" ]; then
    sed -n 2,14p "$0" >&2
    exit 2
fi
if [ "$mode" = compare ]; then
    exec python3 - "$dir" "${3:?compare needs two directories}" <<'PY'
import collections, hashlib, os, re, sys
def normalised(text):
    keep = lambda l: re.sub(r"\b(U?R|P)\d+\b", r"\1", l).replace(".reuse", "").strip()
    return "\n".join(sorted(keep(l) for l in text.splitlines()))
def load(root):
    r = {}
    for case in sorted(os.listdir(root)):
        exact, same = collections.Counter(), collections.Counter()
        for f in os.listdir(os.path.join(root, case)):
            if f.endswith(".sass"):
                text = open(os.path.join(root, case, f)).read()
                exact[hashlib.md5(text.encode()).hexdigest()] += 1
                same[hashlib.md5(normalised(text).encode()).hexdigest()] += 1
        r[case] = (exact, same)
    return r
a, b = load(sys.argv[1]), load(sys.argv[2])
if a.keys() != b.keys():
    sys.exit("the two snapshots cover different cases")
total = sum(sum(x[0].values()) for x in a.values())
exact = sum(sum((a[c][0] & b[c][0]).values()) for c in a)
same = sum(sum((a[c][1] & b[c][1]).values()) for c in a)
print(f"{total} kernels: {exact} byte-identical SASS, {same} the same instructions up to "
      f"register names and order, {total - same} otherwise different")
for c in a:
    if a[c][1] != b[c][1]:
        print("  differs:", c)
PY
fi
[ "$mode" = save ] || { echo "unknown mode '$mode' (save or compare)" >&2; exit 2; }
cuobjdump=${CUOBJDUMP:-$(command -v cuobjdump || true)}
[ -x "$cuobjdump" ] || { echo "no cuobjdump (set CUOBJDUMP)" >&2; exit 2; }
shift 2
models=("$@")
if [ ${#models[@]} -eq 0 ]; then
    models=(examples/conv_block.onnx tests/models/data/*/model.onnx
            tests/zoo/data/tv_densenet_dynamo/model.onnx tests/zoo/data/hf_bert_dynamo/model.onnx
            tests/zoo/data/tv_resnet_bottleneck_dynamo/model.onnx)
fi
CONFIGS=${CONFIGS:-"128x128x32_w2x4_s3_k1 64x64x32_w2x2_s3_k1 64x32x32_w2x1_s2_k1 128x64x32_w2x2_s4_k2
    32x32x16_w1x1_s2_k1_simt 64x64x16_w2x2_s2_k2_simt 128x256x64_w8x1_s4_k1_wgmma
    128x128x64_w8x1_s3_k1_wgmma 64x32x64_w4x1_s6_k1_wgmma 128x128x64_w8x1_s4_k2_wgmma"}
rm -rf "$dir" && mkdir -p "$dir"
for m in "${models[@]}"; do
    for c in $CONFIGS; do
        for precision in f32 fp16; do
            case_dir="$dir/$(echo "$m" | tr / _)_${c}_$precision"
            mkdir -p "$case_dir"
            flags=()
            [ $precision = fp16 ] && flags=(--fp16)
            ${CONFLUX_BIN:-build/bin/conflux} compile "$m" --target cuda --arch sm_90 --tune none "${flags[@]}" \
                --perf-config "$c" --no-kernel-cache --quiet --dump-kernels "$case_dir" >/dev/null
            for f in "$case_dir"/*.cubin; do
                case "$f" in *gemm*|*split*) ;; *) continue ;; esac
                "$cuobjdump" -sass "$f" | grep -E '^\s+/\*[0-9a-f]{4}\*/' |
                    sed 's#/\*[0-9a-f]*\*/##g; s#;.*##' >"$f.sass"
            done
            rm -f "$case_dir"/*.cu "$case_dir"/*.cubin
        done
    done
    echo "saved $m"
done
