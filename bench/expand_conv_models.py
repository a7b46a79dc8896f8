#!/usr/bin/env python3
"""EfficientNet-B0's expand and depthwise convolutions as small ONNX models for
bench/expand_conv_candidates.sh: x -> 1x1 conv (so that the convolution under test reads a
channels-last f16 tensor, as inside the network) -> the convolution under test (+ bias, + SiLU
unless the name says bias only) -> a 1x1 projection to 16 channels (so that it writes one).
Random weights; the shapes are those of batch 32.

    python3 bench/expand_conv_models.py DIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

RNG = np.random.default_rng(0)


def conv(nodes, inits, x, c, k, ksize=1, stride=1, group=1, silu=True, tag=""):
    fan_in = c // group * ksize * ksize
    w = RNG.standard_normal((k, c // group, ksize, ksize)) / np.sqrt(fan_in)
    b = RNG.standard_normal(k) * 0.1
    inits += [numpy_helper.from_array(w.astype(np.float32), "w" + tag),
              numpy_helper.from_array(b.astype(np.float32), "b" + tag)]
    nodes.append(helper.make_node("Conv", [x, "w" + tag, "b" + tag], ["c" + tag],
                                  pads=[ksize // 2] * 4, strides=[stride, stride], group=group))
    out = "c" + tag
    if silu:
        nodes += [helper.make_node("Sigmoid", [out], ["s" + tag]),
                  helper.make_node("Mul", [out, "s" + tag], ["y" + tag])]
        out = "y" + tag
    return out


def model(path, n, c, hw, k, ksize=1, stride=1, group=1, silu=True, pre=True):
    nodes, inits = [], []
    x = conv(nodes, inits, "x", c, c, silu=False, tag="pre") if pre else "x"
    y = conv(nodes, inits, x, c, k, ksize, stride, group, silu, tag="mid")
    y = conv(nodes, inits, y, k, 16, silu=False, tag="post")
    graph = helper.make_graph(nodes, os.path.basename(path),
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, c, hw, hw])],
                              [helper.make_tensor_value_info(y, TensorProto.FLOAT, None)], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


# name: (batch, in channels, size, out channels, options); the comments name EfficientNet-B0's
# launches at batch 32 (conflux compile's @ numbers).
MODELS = {
    "e1": (32, 16, 112, 96, {}),                           # @27: K = 16, N = 96
    "e2": (32, 24, 56, 144, {}),                           # @48, @69
    "e3": (32, 40, 28, 240, {}),                           # @90, @111
    "e4": (32, 40, 28, 240, {"silu": False}),              # e3, bias only
    "e5": (32, 3, 224, 32, {"ksize": 3, "stride": 2, "pre": False}),  # the stem
    "e6": (32, 144, 56, 144, {"ksize": 3, "group": 144}),  # @51: depthwise 3x3
    "e7": (32, 112, 14, 672, {}),                          # @195, @216, @237
    "e8": (32, 16, 112, 96, {"silu": False}),              # e1, bias only
    "e9": (32, 112, 14, 672, {"silu": False}),             # e7, bias only
}

if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(out, exist_ok=True)
    for name, (n, c, hw, k, opts) in MODELS.items():
        model(os.path.join(out, name + ".onnx"), n, c, hw, k, **opts)
