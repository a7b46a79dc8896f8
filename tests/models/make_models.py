#!/usr/bin/env python3
"""Writes the end-to-end model tests in the ONNX backend-test layout.

Each model goes to data/<name>/model.onnx with data/<name>/test_data_set_0/{input,output}_N.pb;
the expected outputs come from onnxruntime (graph optimisations off), an oracle independent of
Conflux. The generated files are committed: CI runs them with no Python packages installed.
One model also gets .npy copies of its inputs and expected outputs for the `conflux run` test.

Usage: python3 tests/models/make_models.py   (needs onnx, numpy, onnxruntime)
"""
import os
import shutil

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data")
OPSET = 17


def rand(rng, shape, scale=1.0, dtype=np.float32):
    return (rng.standard_normal(shape) * scale).astype(dtype)


def const(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def tensor_type(array):
    return helper.np_dtype_to_tensor_dtype(array.dtype)


def build(name, nodes, inputs, outputs, initializers, opset=OPSET, check=True):
    """inputs: {name: array} (the test data); outputs: {name: (elem_type, shape)}. check=False
    for an op version ONNX has since deprecated, which its checker refuses although exporters
    still write it and onnxruntime runs it."""
    graph = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info(n, tensor_type(a), a.shape) for n, a in inputs.items()],
        [helper.make_tensor_value_info(n, t, s) for n, (t, s) in outputs.items()],
        initializer=initializers)
    model = helper.make_model(graph, producer_name="conflux-tests",
                              opset_imports=[helper.make_opsetid("", opset)])
    # The IR version that introduced the opset (ONNX's checker wants at least that one).
    model.ir_version = 8 if opset <= 18 else 9 if opset <= 20 else 10
    if check:
        onnx.checker.check_model(model, full_check=True)
    return model


def write(name, model, inputs, npy=False, check=None):
    """check: where given, a test of onnxruntime's outputs against values computed otherwise."""
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(model.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    output_names = [o.name for o in session.get_outputs()]
    results = session.run(output_names, inputs)
    assert check is None or check(results), f"{name}: onnxruntime disagrees with the check"

    directory = os.path.join(DATA, name)
    shutil.rmtree(directory, ignore_errors=True)
    data_set = os.path.join(directory, "test_data_set_0")
    os.makedirs(data_set)
    onnx.save(model, os.path.join(directory, "model.onnx"))
    for i, (input_name, value) in enumerate(inputs.items()):
        onnx.save_tensor(numpy_helper.from_array(value, input_name),
                         os.path.join(data_set, f"input_{i}.pb"))
    for i, (output_name, value) in enumerate(zip(output_names, results)):
        onnx.save_tensor(numpy_helper.from_array(value, output_name),
                         os.path.join(data_set, f"output_{i}.pb"))
    if npy:
        npy_dir = os.path.join(directory, "npy")
        os.makedirs(os.path.join(npy_dir, "expected"))
        for input_name, value in inputs.items():
            np.save(os.path.join(npy_dir, f"{input_name}.npy"), value)
        for output_name, value in zip(output_names, results):
            np.save(os.path.join(npy_dir, "expected", output_name.replace("/", "_") + ".npy"),
                    value)
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(directory) for f in fs)
    assert size < 200 * 1024, f"{name} is {size} bytes"
    print(f"{name}: {size} bytes, outputs " +
          ", ".join(f"{n} {r.dtype}{list(r.shape)}" for n, r in zip(output_names, results)))


def conv_add_relu_transpose_reshape(rng):
    x = rand(rng, (2, 4, 10, 12))
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
        helper.make_node("Add", ["c", "b"], ["a"]),
        helper.make_node("Relu", ["a"], ["r"]),
        helper.make_node("Transpose", ["r"], ["t"], perm=[0, 2, 3, 1]),
        helper.make_node("Reshape", ["t", "shape"], ["y"]),
    ]
    inits = [const("w", rand(rng, (16, 4, 3, 3), 0.3)), const("b", rand(rng, (1, 16, 1, 1), 0.1)),
             const("shape", np.array([2, -1, 16], dtype=np.int64))]
    model = build("conv_add_relu_transpose_reshape", nodes, {"x": x},
                  {"y": (TensorProto.FLOAT, [2, 120, 16])}, inits)
    write("conv_add_relu_transpose_reshape", model, {"x": x})


def matmul_gelu_heads(rng):
    x = rand(rng, (2, 8, 32))
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["m"]),
        helper.make_node("Add", ["m", "b"], ["h"]),
        # erf-GELU as exporters write it: 0.5 * h * (1 + erf(h / sqrt(2)))
        helper.make_node("Div", ["h", "sqrt2"], ["d"]),
        helper.make_node("Erf", ["d"], ["e"]),
        helper.make_node("Add", ["e", "one"], ["e1"]),
        helper.make_node("Mul", ["h", "e1"], ["g0"]),
        helper.make_node("Mul", ["g0", "half"], ["g"]),
        helper.make_node("Reshape", ["g", "heads"], ["split"]),
        helper.make_node("Transpose", ["split"], ["y"], perm=[0, 2, 1, 3]),
    ]
    inits = [const("w", rand(rng, (32, 64), 0.2)), const("b", rand(rng, (64,), 0.1)),
             const("sqrt2", np.array(np.sqrt(2), dtype=np.float32)),
             const("one", np.array(1, dtype=np.float32)),
             const("half", np.array(0.5, dtype=np.float32)),
             const("heads", np.array([2, 8, 4, 16], dtype=np.int64))]
    model = build("matmul_gelu_heads", nodes, {"x": x},
                  {"y": (TensorProto.FLOAT, [2, 4, 8, 16])}, inits)
    write("matmul_gelu_heads", model, {"x": x})


def grouped_strided_dilated_conv(rng):
    x = rand(rng, (1, 8, 13, 11))
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], group=2, strides=[2, 1],
                         dilations=[1, 2], pads=[1, 0, 2, 1], kernel_shape=[3, 3]),
        helper.make_node("Relu", ["c"], ["y"]),
    ]
    inits = [const("w", rand(rng, (12, 4, 3, 3), 0.3)), const("b", rand(rng, (12,), 0.1))]
    model = build("grouped_strided_dilated_conv", nodes, {"x": x},
                  {"y": (TensorProto.FLOAT, [1, 12, 7, 8])}, inits)
    write("grouped_strided_dilated_conv", model, {"x": x})


def two_outputs(rng):
    # The second output's name has a '/', which `conflux run --output-dir` must sanitise.
    x = rand(rng, (1, 3, 8, 8))
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
        helper.make_node("Relu", ["c"], ["features"]),
        helper.make_node("Sigmoid", ["features"], ["s"]),
        helper.make_node("Transpose", ["s"], ["head/logits"], perm=[0, 2, 3, 1]),
    ]
    inits = [const("w", rand(rng, (6, 3, 3, 3), 0.3))]
    model = build("two_outputs", nodes, {"x": x},
                  {"features": (TensorProto.FLOAT, [1, 6, 8, 8]),
                   "head/logits": (TensorProto.FLOAT, [1, 8, 8, 6])}, inits)
    write("two_outputs", model, {"x": x}, npy=True)


def fp16_conv(rng):
    x = rand(rng, (1, 4, 8, 8), 1.0, np.float16)
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
        helper.make_node("Add", ["c", "b"], ["a"]),
        helper.make_node("Relu", ["a"], ["r"]),
        helper.make_node("Transpose", ["r"], ["y"], perm=[0, 2, 3, 1]),
    ]
    inits = [const("w", rand(rng, (8, 4, 3, 3), 0.2, np.float16)),
             const("b", rand(rng, (1, 8, 1, 1), 0.1, np.float16))]
    model = build("fp16_conv", nodes, {"x": x}, {"y": (TensorProto.FLOAT16, [1, 8, 8, 8])}, inits)
    write("fp16_conv", model, {"x": x})


def depthwise_clip_pool_gemm(rng):
    x = rand(rng, (2, 8, 10, 10))
    nodes = [
        helper.make_node("Conv", ["x", "dw", "db"], ["c"], group=8, pads=[1, 1, 1, 1],
                         kernel_shape=[3, 3]),
        helper.make_node("Clip", ["c", "lo", "hi"], ["r6"]),
        helper.make_node("GlobalAveragePool", ["r6"], ["p"]),
        helper.make_node("Flatten", ["p"], ["f"], axis=1),
        helper.make_node("Gemm", ["f", "fw", "fb"], ["y"], transB=1),
    ]
    inits = [const("dw", rand(rng, (8, 1, 3, 3), 0.5)), const("db", rand(rng, (8,), 0.1)),
             const("lo", np.array(0, dtype=np.float32)),
             const("hi", np.array(6, dtype=np.float32)),
             const("fw", rand(rng, (10, 8), 0.3)), const("fb", rand(rng, (10,), 0.1))]
    model = build("depthwise_clip_pool_gemm", nodes, {"x": x},
                  {"y": (TensorProto.FLOAT, [2, 10])}, inits)
    write("depthwise_clip_pool_gemm", model, {"x": x})


def conv_batchnorm_relu_maxpool(rng):
    x = rand(rng, (1, 3, 12, 12))
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
        helper.make_node("BatchNormalization", ["c", "scale", "bias", "mean", "var"], ["n"],
                         epsilon=1e-3),
        helper.make_node("Relu", ["n"], ["r"]),
        helper.make_node("MaxPool", ["r"], ["y"], kernel_shape=[2, 2], strides=[2, 2]),
    ]
    inits = [const("w", rand(rng, (6, 3, 3, 3), 0.3)),
             const("scale", (1 + rand(rng, (6,), 0.1))), const("bias", rand(rng, (6,), 0.1)),
             const("mean", rand(rng, (6,), 0.1)),
             const("var", (0.5 + rng.random(6)).astype(np.float32))]
    model = build("conv_batchnorm_relu_maxpool", nodes, {"x": x},
                  {"y": (TensorProto.FLOAT, [1, 6, 6, 6])}, inits)
    write("conv_batchnorm_relu_maxpool", model, {"x": x})


def squeeze_unsqueeze_tail(rng):
    x = rand(rng, (1, 4, 1, 8))
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[0, 1, 0, 1], kernel_shape=[1, 3]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("Squeeze", ["r", "sq_axes"], ["s"]),
        helper.make_node("Transpose", ["s"], ["t"], perm=[0, 2, 1]),
        helper.make_node("Unsqueeze", ["t", "unsq_axes"], ["y"]),
    ]
    inits = [const("w", rand(rng, (6, 4, 1, 3), 0.3)),
             const("sq_axes", np.array([2], dtype=np.int64)),
             const("unsq_axes", np.array([1], dtype=np.int64))]
    model = build("squeeze_unsqueeze_tail", nodes, {"x": x},
                  {"y": (TensorProto.FLOAT, [1, 1, 8, 6])}, inits)
    write("squeeze_unsqueeze_tail", model, {"x": x})

def grouped_query_attention(rng):
    # LLaMA's attention as Hugging Face's eager path exports it: 4 query heads share 2 key/value
    # heads; repeat_kv is Unsqueeze -> Expand -> Reshape (a copy unless the compiler keeps the
    # heads grouped), a causal mask added to the scaled scores.
    b, s, e, h, kvh, d = 2, 16, 64, 4, 2, 16
    x = rand(rng, (b, s, e))
    mask = np.triu(np.full((s, s), -1e9, dtype=np.float32), 1)[None, None]
    nodes = [
        helper.make_node("MatMul", ["x", "wq"], ["q0"]),
        helper.make_node("Reshape", ["q0", "q_heads"], ["q1"]),
        helper.make_node("Transpose", ["q1"], ["q"], perm=[0, 2, 1, 3]),
    ]
    for n in ("k", "v"):
        nodes += [
            helper.make_node("MatMul", ["x", "w" + n], [n + "0"]),
            helper.make_node("Reshape", [n + "0", "kv_heads"], [n + "1"]),
            helper.make_node("Transpose", [n + "1"], [n + "2"], perm=[0, 2, 1, 3]),
            helper.make_node("Unsqueeze", [n + "2", "axis2"], [n + "3"]),
            helper.make_node("Expand", [n + "3", "repeated"], [n + "4"]),
            helper.make_node("Reshape", [n + "4", "all_heads"], [n + "5"]),
        ]
    nodes += [
        helper.make_node("Transpose", ["k5"], ["kt"], perm=[0, 1, 3, 2]),
        helper.make_node("MatMul", ["q", "kt"], ["scores0"]),
        helper.make_node("Mul", ["scores0", "scale"], ["scores1"]),
        helper.make_node("Add", ["scores1", "mask"], ["scores"]),
        helper.make_node("Softmax", ["scores"], ["p"], axis=-1),
        helper.make_node("MatMul", ["p", "v5"], ["o0"]),
        helper.make_node("Transpose", ["o0"], ["o1"], perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["o1", "merged"], ["o2"]),
        helper.make_node("MatMul", ["o2", "wo"], ["y"]),
    ]
    inits = [const("wq", rand(rng, (e, h * d), 0.2)), const("wk", rand(rng, (e, kvh * d), 0.2)),
             const("wv", rand(rng, (e, kvh * d), 0.2)), const("wo", rand(rng, (h * d, e), 0.2)),
             const("q_heads", np.array([b, s, h, d], dtype=np.int64)),
             const("kv_heads", np.array([b, s, kvh, d], dtype=np.int64)),
             const("axis2", np.array([2], dtype=np.int64)),
             const("repeated", np.array([b, kvh, h // kvh, s, d], dtype=np.int64)),
             const("all_heads", np.array([b, h, s, d], dtype=np.int64)),
             const("scale", np.array(1 / np.sqrt(d), dtype=np.float32)),
             const("mask", mask),
             const("merged", np.array([b, s, h * d], dtype=np.int64))]
    model = build("grouped_query_attention", nodes, {"x": x},
                  {"y": (TensorProto.FLOAT, [b, s, e])}, inits)
    write("grouped_query_attention", model, {"x": x})


def sliced_layer_norm_and_pool(rng):
    # Views that alias memory at an offset no 16-byte load may start at: a layer norm over 64 of
    # 70 values starting at the 2nd, and a max pool of 16 of a convolution's 20 channels starting
    # at the 3rd (channels-last after the layout pass). Their kernels load as many elements at
    # once as the offset allows.
    x = rand(rng, (2, 5, 70))
    image = rand(rng, (1, 3, 12, 12))
    nodes = [
        helper.make_node("Slice", ["x", "s_start", "s_end", "s_axis"], ["xs"]),
        helper.make_node("LayerNormalization", ["xs", "ln_scale", "ln_bias"], ["normed"],
                         axis=-1, epsilon=1e-5),
        helper.make_node("Conv", ["image", "w"], ["c"], pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
        helper.make_node("Slice", ["c", "c_start", "c_end", "c_axis"], ["cs"]),
        helper.make_node("MaxPool", ["cs"], ["pooled"], kernel_shape=[3, 3], strides=[2, 2],
                         pads=[1, 1, 1, 1]),
    ]
    inits = [const("s_start", np.array([1], np.int64)), const("s_end", np.array([65], np.int64)),
             const("s_axis", np.array([2], np.int64)),
             const("ln_scale", 1 + rand(rng, (64,), 0.1)), const("ln_bias", rand(rng, (64,), 0.1)),
             const("w", rand(rng, (20, 3, 3, 3), 0.3)),
             const("c_start", np.array([2], np.int64)), const("c_end", np.array([18], np.int64)),
             const("c_axis", np.array([1], np.int64))]
    model = build("sliced_layer_norm_and_pool", nodes, {"x": x, "image": image},
                  {"normed": (TensorProto.FLOAT, [2, 5, 64]),
                   "pooled": (TensorProto.FLOAT, [1, 16, 6, 6])}, inits)
    write("sliced_layer_norm_and_pool", model, {"x": x, "image": image})


def conv_group_norm_mish(rng):
    # A diffusion U-Net's or YOLO's block: convolution, GroupNormalization as opset 21 writes it
    # (scale and bias per channel), Mish (opset 18).
    x = rand(rng, (2, 4, 10, 10))
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
        helper.make_node("GroupNormalization", ["c", "gn_scale", "gn_bias"], ["g"], num_groups=4,
                         epsilon=1e-5),
        helper.make_node("Mish", ["g"], ["y"]),
    ]
    inits = [const("w", rand(rng, (16, 4, 3, 3), 0.3)), const("b", rand(rng, (16,), 0.5)),
             const("gn_scale", 1 + rand(rng, (16,), 0.3)), const("gn_bias", rand(rng, (16,), 0.5))]
    model = build("conv_group_norm_mish", nodes, {"x": x},
                  {"y": (TensorProto.FLOAT, [2, 16, 10, 10])}, inits, opset=21)
    write("conv_group_norm_mish", model, {"x": x})


def group_norm_per_group(rng):
    # GroupNormalization as opset 18 specified it: scale and bias per group, not per channel
    # (deprecated by opset 21, whose per-channel form replaced it).
    x = rand(rng, (2, 6, 5, 5), 2.0) + 1.0
    nodes = [helper.make_node("GroupNormalization", ["x", "scale", "bias"], ["y"], num_groups=3,
                              epsilon=1e-3)]
    inits = [const("scale", 1 + rand(rng, (3,), 0.3)), const("bias", rand(rng, (3,), 0.5))]
    model = build("group_norm_per_group", nodes, {"x": x},
                  {"y": (TensorProto.FLOAT, [2, 6, 5, 5])}, inits, opset=18, check=False)
    write("group_norm_per_group", model, {"x": x})


def qdq_conv_gemm(rng):
    # A QDQ model as onnxruntime's quantize_static writes one: activations through
    # QuantizeLinear -> DequantizeLinear (uint8, zero point 128), int8 weights with per-channel
    # scales dequantised in front of Conv and Gemm. The quantised activations are an output too,
    # so their integers are compared exactly.
    x = rand(rng, (2, 8, 6, 6))
    w = rng.integers(-127, 128, (16, 8, 3, 3)).astype(np.int8)
    g = rng.integers(-127, 128, (10, 16 * 36)).astype(np.int8)
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "sx", "zx"], ["xq"]),
        helper.make_node("DequantizeLinear", ["xq", "sx", "zx"], ["xd"]),
        helper.make_node("DequantizeLinear", ["w", "sw", "zw"], ["wd"], axis=0),
        helper.make_node("Conv", ["xd", "wd", "b"], ["c"], pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("QuantizeLinear", ["r", "sr", "zr"], ["rq"]),
        helper.make_node("DequantizeLinear", ["rq", "sr", "zr"], ["rd"]),
        helper.make_node("Flatten", ["rd"], ["f"]),
        helper.make_node("DequantizeLinear", ["g", "sg"], ["gd"], axis=0),
        helper.make_node("Gemm", ["f", "gd"], ["y"], transB=1),
    ]
    inits = [const("sx", np.float32(0.03)), const("zx", np.uint8(128)), const("w", w),
             const("sw", (0.002 + 0.002 * rng.random(16)).astype(np.float32)),
             const("zw", np.zeros(16, np.int8)), const("b", rand(rng, (16,), 0.1)),
             const("sr", np.float32(0.01)), const("zr", np.uint8(0)), const("g", g),
             const("sg", (0.001 + 0.001 * rng.random(10)).astype(np.float32))]
    model = build("qdq_conv_gemm", nodes, {"x": x},
                  {"y": (TensorProto.FLOAT, [2, 10]), "rq": (TensorProto.UINT8, [2, 16, 6, 6])},
                  inits)
    write("qdq_conv_gemm", model, {"x": x})


def col2im_fold(rng):
    # F.fold as the dynamo exporter writes it (timm's VOLO): Col2Im with strides, dilations and
    # pads that differ per axis, then an add so the result goes on through a kernel.
    image, block = [7, 8], [3, 3]
    strides, dilations, pads = [2, 1], [1, 2], [1, 0, 1, 2]
    blocks = 1
    for k in range(2):
        reach = dilations[k] * (block[k] - 1) + 1
        blocks *= (image[k] + pads[k] + pads[2 + k] - reach) // strides[k] + 1
    x = rand(rng, (2, 3 * 9, blocks))
    nodes = [
        helper.make_node("Col2Im", ["x", "image", "block"], ["f"], strides=strides,
                         dilations=dilations, pads=pads),
        helper.make_node("Add", ["f", "b"], ["y"]),
    ]
    inits = [const("image", np.array(image, np.int64)), const("block", np.array(block, np.int64)),
             const("b", rand(rng, (1, 3, 1, 1), 0.5))]
    model = build("col2im_fold", nodes, {"x": x}, {"y": (TensorProto.FLOAT, [2, 3, 7, 8])}, inits,
                  opset=18)
    write("col2im_fold", model, {"x": x})


def grid_sample(rng):
    # RT-DETR's deformable attention samples with GridSample (bilinear, zeros, align_corners=0);
    # the second output takes nearest positions clamped to the border with corners aligned.
    # The grid reaches past the image on every side.
    x = rand(rng, (2, 3, 5, 6))
    grid = rng.uniform(-1.3, 1.3, (2, 4, 7, 2)).astype(np.float32)
    nodes = [
        helper.make_node("GridSample", ["x", "grid"], ["y"], mode="bilinear",
                         padding_mode="zeros", align_corners=0),
        helper.make_node("GridSample", ["x", "grid"], ["z"], mode="nearest",
                         padding_mode="border", align_corners=1),
    ]
    model = build("grid_sample", nodes, {"x": x, "grid": grid},
                  {"y": (TensorProto.FLOAT, [2, 3, 4, 7]), "z": (TensorProto.FLOAT, [2, 3, 4, 7])},
                  [])
    write("grid_sample", model, {"x": x, "grid": grid})


def dft_mix(rng):
    # FNet's torch.fft.fftn exports to DFT. Here opset 20's form: a one-sided transform of a real
    # signal zero-padded to dft_length 10 along the axis input -2, then an inverse transform of
    # that complex result along axis 1 cut to dft_length 4, then an add so the result goes on
    # through a kernel. numpy's FFT checks onnxruntime's values before they are written.
    x = rand(rng, (2, 5, 8, 1))
    nodes = [
        helper.make_node("DFT", ["x", "ten", "minus_two"], ["f"], onesided=1),
        helper.make_node("DFT", ["f", "four", "one"], ["g"], inverse=1),
        helper.make_node("Add", ["g", "b"], ["y"]),
    ]
    b = rand(rng, (1, 1, 6, 2), 0.5)
    inits = [const("ten", np.array(10, np.int64)), const("minus_two", np.array(-2, np.int64)),
             const("four", np.array(4, np.int64)), const("one", np.array(1, np.int64)),
             const("b", b)]
    model = build("dft_mix", nodes, {"x": x}, {"y": (TensorProto.FLOAT, [2, 4, 6, 2])}, inits,
                  opset=20)
    f = np.fft.rfft(x[..., 0], n=10, axis=2)
    g = np.fft.ifft(f, n=4, axis=1)
    expected = np.stack([g.real, g.imag], axis=-1) + b
    write("dft_mix", model, {"x": x}, check=lambda y: np.allclose(y[0], expected, atol=1e-5))


def main():
    rng = np.random.default_rng(7)
    conv_add_relu_transpose_reshape(rng)
    matmul_gelu_heads(rng)
    grouped_strided_dilated_conv(rng)
    two_outputs(rng)
    fp16_conv(rng)
    depthwise_clip_pool_gemm(rng)
    conv_batchnorm_relu_maxpool(rng)
    squeeze_unsqueeze_tail(rng)
    grouped_query_attention(rng)
    sliced_layer_norm_and_pool(rng)
    conv_group_norm_mish(rng)
    group_norm_per_group(rng)
    # Their own seeds: the models above keep their data.
    qdq_conv_gemm(np.random.default_rng(11))
    col2im_fold(np.random.default_rng(13))
    grid_sample(np.random.default_rng(17))
    dft_mix(np.random.default_rng(19))


if __name__ == "__main__":
    main()
