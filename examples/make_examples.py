#!/usr/bin/env python3
"""Writes the bundled example models (committed, so running them needs no Python).

conv_block.onnx: the pattern Conflux is built around -- a convolution whose result gets a bias,
a ReLU and then a layout change (NHWC transpose + reshape into a sequence of 8-channel tokens).

Usage: python3 examples/make_examples.py   (needs the `onnx` and `numpy` packages)
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))


def conv_block():
    rng = np.random.default_rng(2024)
    w = (rng.standard_normal((8, 3, 3, 3)) * 0.3).astype(np.float32)
    b = (rng.standard_normal((1, 8, 1, 1)) * 0.1).astype(np.float32)
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["conv"], name="conv", pads=[1, 1, 1, 1],
                         kernel_shape=[3, 3]),
        helper.make_node("Add", ["conv", "bias"], ["biased"], name="bias"),
        helper.make_node("Relu", ["biased"], ["act"], name="relu"),
        helper.make_node("Transpose", ["act"], ["nhwc"], name="to_nhwc", perm=[0, 2, 3, 1]),
        helper.make_node("Reshape", ["nhwc", "tokens_shape"], ["y"], name="to_tokens"),
    ]
    graph = helper.make_graph(
        nodes, "conv_block",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 256, 8])],
        initializer=[
            numpy_helper.from_array(w, "w"),
            numpy_helper.from_array(b, "bias"),
            numpy_helper.from_array(np.array([1, 256, 8], dtype=np.int64), "tokens_shape"),
        ])
    model = helper.make_model(graph, producer_name="conflux-examples",
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


def main():
    path = os.path.join(HERE, "conv_block.onnx")
    onnx.save(conv_block(), path)
    print(f"wrote {path} ({os.path.getsize(path)} bytes)")


if __name__ == "__main__":
    main()
