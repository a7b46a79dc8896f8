#!/usr/bin/env python3
"""Writes a ResNet-50-shaped ONNX model (torchvision's v1.5 layout: stride on the 3x3 conv of
each bottleneck) with seeded random weights, for the memory-plan check and benchmarks.

    python3 bench/make_resnet50.py OUT.onnx [--batch N] [--size 224] [--fp16]

The batch axis is symbolic ("batch") unless --batch is given; --fp16 makes every weight, the
input and the output float16. Needs numpy and onnx only.
"""
import argparse

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


class Builder:
    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits = [], []
        self.count = 0

    def name(self, prefix):
        self.count += 1
        return f"{prefix}{self.count}"

    def weight(self, prefix, shape, scale):
        n = self.name(prefix)
        self.inits.append(numpy_helper.from_array(
            (self.rng.standard_normal(shape) * scale).astype(np.float32), n))
        return n

    def conv_bn(self, x, cin, cout, k, stride, relu):
        w = self.weight("w", (cout, cin, k, k), (2.0 / (cin * k * k)) ** 0.5)
        y = self.name("conv")
        self.nodes.append(helper.make_node("Conv", [x, w], [y], kernel_shape=[k, k],
                                           strides=[stride, stride], pads=[k // 2] * 4))
        scale = self.weight("gamma", (cout,), 0.1)
        self.inits[-1].CopyFrom(numpy_helper.from_array(
            (1 + 0.1 * self.rng.standard_normal(cout)).astype(np.float32), scale))
        bias = self.weight("beta", (cout,), 0.1)
        mean = self.weight("mean", (cout,), 0.1)
        var = self.name("var")
        self.inits.append(numpy_helper.from_array(
            (1 + 0.1 * self.rng.random(cout)).astype(np.float32), var))
        z = self.name("bn")
        self.nodes.append(helper.make_node("BatchNormalization", [y, scale, bias, mean, var], [z]))
        if not relu:
            return z
        r = self.name("relu")
        self.nodes.append(helper.make_node("Relu", [z], [r]))
        return r

    def bottleneck(self, x, cin, width, stride):
        a = self.conv_bn(x, cin, width, 1, 1, True)
        b = self.conv_bn(a, width, width, 3, stride, True)
        c = self.conv_bn(b, width, width * 4, 1, 1, False)
        shortcut = x
        if stride != 1 or cin != width * 4:
            shortcut = self.conv_bn(x, cin, width * 4, 1, stride, False)
        s = self.name("add")
        self.nodes.append(helper.make_node("Add", [c, shortcut], [s]))
        r = self.name("relu")
        self.nodes.append(helper.make_node("Relu", [s], [r]))
        return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--batch", type=int)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--fp16", action="store_true")
    args = ap.parse_args()

    b = Builder(args.seed)
    x = b.conv_bn("input", 3, 64, 7, 2, True)
    p = b.name("pool")
    b.nodes.append(helper.make_node("MaxPool", [x], [p], kernel_shape=[3, 3], strides=[2, 2],
                                    pads=[1, 1, 1, 1]))
    x, cin = p, 64
    for width, blocks, stride in [(64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)]:
        for i in range(blocks):
            x = b.bottleneck(x, cin, width, stride if i == 0 else 1)
            cin = width * 4
    g = b.name("gap")
    b.nodes.append(helper.make_node("GlobalAveragePool", [x], [g]))
    f = b.name("flat")
    b.nodes.append(helper.make_node("Flatten", [g], [f], axis=1))
    fc_w = b.weight("fc_w", (1000, 2048), 2048 ** -0.5)
    fc_b = b.weight("fc_b", (1000,), 0.01)
    b.nodes.append(helper.make_node("Gemm", [f, fc_w, fc_b], ["logits"], transB=1))

    batch = args.batch if args.batch else "batch"
    elem = TensorProto.FLOAT16 if args.fp16 else TensorProto.FLOAT
    if args.fp16:
        b.inits = [numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float16), t.name)
                   for t in b.inits]
    graph = helper.make_graph(
        b.nodes, "resnet50",
        [helper.make_tensor_value_info("input", elem, [batch, 3, args.size, args.size])],
        [helper.make_tensor_value_info("logits", elem, [batch, 1000])],
        b.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="conflux bench/make_resnet50.py")
    onnx.checker.check_model(model)
    onnx.save(model, args.out)


if __name__ == "__main__":
    main()
