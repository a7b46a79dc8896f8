#!/usr/bin/env bash
# Regenerates the committed seed corpora under tests/fuzz/corpus/ (run from anywhere; needs
# protoc and /usr/include/onnx/onnx.proto, as the build does). Seeds are small on purpose: valid
# inputs of every kind the readers take, the cases issue 13 found by hand, and broken variants.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="$root/tests/fuzz/corpus"
rm -rf "$out"
mkdir -p "$out"/{onnx_import,npy,cache_import,perf_config,cfx_load}

# --- onnx_import: the committed models, truncated copies, and text-format models -------------
o="$out/onnx_import"
for m in "$root"/tests/models/data/*/model.onnx "$root"/examples/*.onnx; do
  name=$(basename "$(dirname "$m")")
  [ "$name" = examples ] && name=$(basename "$m" .onnx)
  cp "$m" "$o/$name.onnx"
  size=$(stat -c %s "$m")
  head -c $((size / 2)) "$m" >"$o/$name.half.onnx"
done

# Out-of-range attributes and operands of the importer's decompositions (OneHot, Hardmax,
# EyeLike, Col2Im, QuantizeLinear, LRN, Upsample, DFT) and Ifs on shapes, written once with Python's onnx helper.
cp "$root"/tests/fuzz/seeds/onnx_import/*.onnx "$o/"

encode() { # name, text-format ModelProto on stdin
  protoc -I/usr/include --encode=onnx.ModelProto /usr/include/onnx/onnx.proto >"$o/$1.onnx"
}
tensor() { # name, elem_type, dims... -> a graph input/output ValueInfoProto body
  local name=$1 type=$2
  shift 2
  printf 'name: "%s" type { tensor_type { elem_type: %s shape {' "$name" "$type"
  for d in "$@"; do printf ' dim { dim_value: %s }' "$d"; done
  printf ' } } }'
}
model() { # opset, graph body
  printf 'ir_version: 8 opset_import { version: %s } graph { name: "g" %s }\n' "$1" "$2"
}
unary() { # name, op_type, attributes, input dims...
  local name=$1 op=$2 attrs=$3
  shift 3
  model 17 "node { input: \"x\" output: \"y\" op_type: \"$op\" $attrs }
    input { $(tensor x 1 "$@") } output { name: \"y\" }" | encode "$name"
}
with_const() { # name, op_type, attributes, const name, const TensorProto body, input dims...
  local name=$1 op=$2 attrs=$3 cname=$4 cbody=$5
  shift 5
  model 17 "node { input: \"x\" input: \"$cname\" output: \"y\" op_type: \"$op\" $attrs }
    initializer { name: \"$cname\" $cbody }
    input { $(tensor x 1 "$@") } output { name: \"y\" }" | encode "$name"
}
i64s() { # dims of a 1-d int64 tensor of the given values
  printf 'data_type: 7 dims: %s' "$#"
  for v in "$@"; do printf ' int64_data: %s' "$v"; done
}

unary relu Relu "" 2 3
unary softmax Softmax 'attribute { name: "axis" i: -1 type: INT }' 2 5
unary transpose Transpose 'attribute { name: "perm" ints: 1 ints: 0 type: INTS }' 3 4
unary maxpool MaxPool 'attribute { name: "kernel_shape" ints: 2 ints: 2 type: INTS }' 1 1 4 4
unary maxpool_big_pads MaxPool 'attribute { name: "kernel_shape" ints: 2 ints: 2 type: INTS }
  attribute { name: "pads" ints: 3 ints: 3 ints: 3 ints: 3 type: INTS }' 1 1 4 4
unary reduce_mean ReduceMean 'attribute { name: "axes" ints: 1 type: INTS }' 2 6
unary duplicate_attribute LeakyRelu 'attribute { name: "alpha" f: 0.5 type: FLOAT }
  attribute { name: "alpha" f: 2 type: FLOAT }' 4
unary huge_input Relu "" 4611686018427387905 4
unary int64_max_input Relu "" 9223372036854775807
with_const reshape Reshape "" shape "$(i64s 3 4)" 12
with_const reshape_wraps Reshape "" shape "$(i64s 4611686018427387905 4)" 4
with_const expand Expand "" shape "$(i64s 2 3)" 3
with_const expand_huge Expand "" shape "$(i64s 8589934592 8589934592)" 1
with_const tile_huge Tile "" repeats "$(i64s 4611686018427387904)" 1
with_const pad Pad "" pads "$(i64s 1 2)" 3
with_const pad_huge Pad "" pads "$(i64s 4611686018427387904 0)" 3
with_const gather Gather 'attribute { name: "axis" i: 0 type: INT }' idx "$(i64s 0 2 1)" 3
with_const gather_out_of_range Gather 'attribute { name: "axis" i: 0 type: INT }' idx \
  "$(i64s 0 7)" 3
with_const slice_starts Slice "" starts "$(i64s 1)" 5
with_const conv Conv 'attribute { name: "pads" ints: 1 ints: 1 ints: 1 ints: 1 type: INTS }' w \
  'data_type: 1 dims: 2 dims: 1 dims: 3 dims: 3 raw_data: "\000\000\200?\000\000\200?\000\000\200?\000\000\200?\000\000\200?\000\000\200?\000\000\200?\000\000\200?\000\000\200?\000\000\200?\000\000\200?\000\000\200?\000\000\200?\000\000\200?\000\000\200?\000\000\200?\000\000\200?\000\000\200?"' \
  1 1 4 4
with_const conv_huge_pads Conv \
  'attribute { name: "pads" ints: 4611686018427387904 ints: 4611686018427387904 type: INTS }' w \
  'data_type: 1 dims: 1 dims: 1 dims: 1 float_data: 1' 1 1 4
with_const conv_pads_2p31 Conv 'attribute { name: "pads" ints: 2147483648 ints: 2147483648 type: INTS }' \
  w 'data_type: 1 dims: 1 dims: 1 dims: 1 float_data: 1' 1 1 4
with_const conv_1x1_huge Conv "" w 'data_type: 1 dims: 1 dims: 1 dims: 1 dims: 1 float_data: 1' \
  1 1 1048576 1048576

model 13 'node { input: "a" input: "b" input: "c" output: "y" op_type: "Range" }
  initializer { name: "a" data_type: 7 int64_data: 9223372036854775806 }
  initializer { name: "b" data_type: 7 int64_data: 9223372036854775807 }
  initializer { name: "c" data_type: 7 int64_data: 4611686018427387904 }
  output { name: "y" }' | encode range_near_int64_max
model 13 'node { input: "s" output: "y" op_type: "ConstantOfShape" }
  initializer { name: "s" data_type: 7 dims: 2 int64_data: 2 int64_data: 3 }
  output { name: "y" }' | encode constant_of_shape
model 13 'node { input: "x" input: "w" output: "y" op_type: "MatMul" }
  initializer { name: "w" data_type: 1 dims: 3 dims: 2 float_data: 1 float_data: 2 float_data: 3
    float_data: 4 float_data: 5 float_data: 6 }
  input { '"$(tensor x 1 2 3)"' } output { name: "y" }' | encode matmul
model 13 'node { input: "x" output: "s" op_type: "Shape" }
  node { input: "x" input: "s" output: "y" op_type: "Reshape" }
  input { name: "x" type { tensor_type { elem_type: 1 shape { dim { dim_param: "N" }
    dim { dim_value: 3 } } } } } output { name: "y" }' | encode symbolic_batch
model 13 'node { input: "x" output: "y" op_type: "Relu" }
  node { input: "x" output: "y" op_type: "Neg" }
  input { '"$(tensor x 1 2)"' } output { name: "y" }' | encode duplicate_outputs
model 13 'node { input: "x" output: "x" op_type: "Relu" }
  input { '"$(tensor x 1 2)"' } output { name: "x" }' | encode output_shadows_input
model 13 'node { input: "x" input: "b" output: "y" op_type: "Add" }
  initializer { name: "b" data_type: 1 dims: 2 float_data: 1 float_data: 2 }
  initializer { name: "b" data_type: 1 dims: 3 float_data: 1 float_data: 2 float_data: 3 }
  input { '"$(tensor x 1 2)"' } output { name: "y" }' | encode duplicate_initializers
model 13 'node { input: "x\001\033[31m" output: "y\n" op_type: "Relu" }
  input { name: "x\001\033[31m" type { tensor_type { elem_type: 1 shape { dim { dim_value: 2 } } } } }
  output { name: "y\n" }' | encode control_characters
printf 'ir_version: 0 opset_import { version: 13 } graph { node { input: "x" output: "y" op_type: "Relu" } input { %s } output { name: "y" } }\n' \
  "$(tensor x 1 2)" | encode ir_version_0
# Chains and wide sums: recursion proportional to the graph's size (kept short here; the
# fuzzer lengthens them).
chain=""
for i in $(seq 1 200); do chain+="node { input: \"v$((i - 1))\" output: \"v$i\" op_type: \"Relu\" } "; done
model 13 "$chain input { $(tensor v0 1 2) } output { name: \"v200\" }" | encode relu_chain_200
sum="node { output: \"y\" op_type: \"Sum\""
for i in $(seq 1 100); do sum+=" input: \"x\""; done
model 13 "$sum } input { $(tensor x 1 2) } output { name: \"y\" }" | encode sum_100_inputs
# Flipped bytes in a valid model.
python3 - "$o/conv_block.onnx" "$o" <<'EOF'
import sys
data = bytearray(open(sys.argv[1], "rb").read())
for i, pos in enumerate((5, len(data) // 3, len(data) // 2, len(data) - 7)):
    flipped = bytearray(data)
    flipped[pos] ^= 0xFF
    open(f"{sys.argv[2]}/conv_block.flip{i}.onnx", "wb").write(flipped)
EOF

# --- npy --------------------------------------------------------------------------------------
n="$out/npy"
npy() { # name, version byte, header dict, data (printf format)
  python3 - "$n/$1.npy" "$2" "$3" "$4" <<'EOF'
import sys
path, major, header, data = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
size = len(header).to_bytes(2 if major == 1 else 4, "little")
body = data.encode("latin-1").decode("unicode_escape").encode("latin-1")
open(path, "wb").write(b"\x93NUMPY" + bytes([major, 0]) + size + header.encode() + body)
EOF
}
npy f32_2x2 1 "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }" \
  '\x00\x00\x80?\x00\x00\x00@\x00\x00@@\x00\x00\x80@'
npy f32_fortran 1 "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }" \
  '\x00\x00\x80?\x00\x00\x00@\x00\x00@@\x00\x00\x80@'
npy f16_3 1 "{'descr': '<f2', 'fortran_order': False, 'shape': (3,), }" '\x00<\x00@\x00B'
npy f64_scalar 1 "{'descr': '<f8', 'fortran_order': False, 'shape': (), }" \
  '\x00\x00\x00\x00\x00\x00\xf0?'
npy i8_4 1 "{'descr': '|i1', 'fortran_order': False, 'shape': (4,), }" '\x01\xff\x02\x80'
npy u8_2 2 "{'descr': '|u1', 'fortran_order': False, 'shape': (2,), }" '\x01\xff'
npy i32_2 3 "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }" '\x01\x00\x00\x00\xff\xff\xff\xff'
npy i64_1 1 "{'descr': '<i8', 'fortran_order': False, 'shape': (1L,), }" '\x07\x00\x00\x00\x00\x00\x00\x00'
npy bool_3 1 "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }" '\x00\x01\x07'
npy empty_0x5 1 "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 5), }" ''
npy big_endian 1 "{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }" '\x3f\x80\x00\x00'
npy bad_descr 1 "{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }" '\x00\x00\x00\x00\x00\x00\x00\x00'
npy huge_shape_short_data 1 "{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387905, 4), }" \
  '\x00\x00\x80?\x00\x00\x00@\x00\x00@@\x00\x00\x80@'
npy shape_wraps_to_zero 1 "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }" ''
npy trailing_bytes 1 "{'descr': '|u1', 'fortran_order': False, 'shape': (1,), }" '\x01\x02'
npy unknown_key 1 "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}" '\x00\x00\x00\x00'
npy unterminated 1 "{'descr': '<f4" ''
printf '\x93NUMPY\x01\x00\xff\xff{' >"$n/header_longer_than_file.npy"
printf '\x93NUMPX\x01\x00\x00\x00' >"$n/bad_magic.npy"
printf '\x93NUMPY\x09\x00\x00\x00' >"$n/bad_version.npy"

# --- cache_import -----------------------------------------------------------------------------
c="$out/cache_import"
entry='{"slot": "dot f16 m128 n128 k64", "key": "dot f16 m128 n128 k64 sm_90/132 gemm-5", "device": "sm_90/132", "generator_version": "gemm-5", "config": "128x128x32_w2x2_s3_k1", "time_ms": 0.25}'
printf '{"conflux_problem_cache": 1, "entries": [%s]}\n' "$entry" >"$c/one_entry.json"
printf '{"conflux_problem_cache": 1, "entries": [%s, %s]}\n' "$entry" "${entry/0.25/0}" >"$c/same_slot_twice.json"
printf '{"conflux_problem_cache": 1, "entries": []}\n' >"$c/empty.json"
printf '{"conflux_problem_cache": 2, "entries": []}\n' >"$c/wrong_format.json"
printf '{"entries": []}\n' >"$c/no_marker.json"
printf '{"conflux_problem_cache": 1, "entries": {}}\n' >"$c/entries_not_array.json"
printf '{"conflux_problem_cache": 1, "entries": [%s]}\n' "${entry/0.25/1e999}" >"$c/time_overflows.json"
printf '{"conflux_problem_cache": 1, "entries": [%s]}\n' "${entry/0.25/-1}" >"$c/time_negative.json"
printf '{"conflux_problem_cache": 1, "entries": [%s]}\n' "${entry/0.25/\"fast\"}" >"$c/time_string.json"
printf '{"conflux_problem_cache": 1, "entries": [{"slot": "s"}]}\n' >"$c/missing_fields.json"
printf '{"conflux_problem_cache": 1, "entries": [%s]}\n' "${entry/dot f16/\\u0000\\u00e9\\ud83d\\ude00}" >"$c/escapes.json"
printf '{"conflux_problem_cache": 1, "entries": [%s' "$entry" >"$c/truncated.json"
printf '[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]\n' >"$c/nested.json"
printf 'null' >"$c/null.json"

# --- perf_config ------------------------------------------------------------------------------
p="$out/perf_config"
for cfg in 128x128x32_w2x2_s3_k1 64x64x16_w2x2_s2_k1_simt 128x256x32_w2x4_s3_k2_v8 \
  64x64x32_w2x2_s3_k1_v1 16x16x16_w1x1_s2_k1 32x32x8_w1x1_s2_k4_v4_simt 0x0x0_w0x0_s0_k0 \
  1048576x1x1_w1x1_s1_k1 1048577x1x1_w1x1_s1_k1 128x128x32_w2x2_s3_k1_v0 \
  128x128x32_w2x2_s3_k1_simt_v8 0128x128x32_w2x2_s3_k1 128x128x32_w2x2_s3 \
  128x128x32_w2x2_s3_k1_ 64x64x64_w4x4_s8_k64_v16 128x256x64_w8x1_s4_k1_wgmma \
  128x128x64_w8x1_s4_k1_wgmma_pp_tma 128x192x64_w8x1_s3_k1_wgmma_ws dw_c8_o4_t128 \
  dw_c4_o4_r4_t256 dw_c1_o8_r16_t1024 dw_mma_c16_r16_w32_t128 dw_mma_c8_r8_w16_t64 \
  dw_mma_c32_r16_w64_t256 dw_mma_c0_r8_w16_t64 dw_mma_c16_r8_w32_t256_p; do
  printf '%s' "$cfg" >"$p/$cfg"
done
# --- cfx_load: saved programs without their 16-byte digest (the fuzzer appends it) -----------
# Needs the conflux tool (CONFLUX, default build/bin/conflux); NVRTC compiles for sm_90, no GPU.
x="$out/cfx_load"
conflux=${CONFLUX:-$root/build/bin/conflux}
strip_digest() { head -c $(($(stat -c %s "$1") - 16)) "$1" >"$2"; rm "$1"; }
"$conflux" compile --target ref "$root/examples/conv_block.onnx" -o "$x/t.cfx" >/dev/null
strip_digest "$x/t.cfx" "$x/ref_conv_block"
"$conflux" compile --target ref "$root/tests/models/data/two_outputs/model.onnx" -o "$x/t.cfx" >/dev/null
strip_digest "$x/t.cfx" "$x/ref_two_outputs"
"$conflux" compile --target cuda --arch sm_90 --tune none --no-kernel-cache --with-reference \
  "$root/tests/models/data/squeeze_unsqueeze_tail/model.onnx" -o "$x/t.cfx" >/dev/null 2>&1
strip_digest "$x/t.cfx" "$x/cuda_squeeze_unsqueeze_tail"

echo "corpus: $(find "$out" -type f | wc -l) files, $(du -sb "$out" | cut -f1) bytes"
