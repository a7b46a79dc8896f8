#!/usr/bin/env python3
"""Per-config times of depthwise layers: each layer (batch, size, channels, kernel, stride; f16
in and out, with its bias) as a small ONNX model made here with the onnx package (no PyTorch
needed), `conflux perf --fp16 --narrow-outputs --tune none --perf-config C` for every config
given, the depthwise kernel's time from the per-kernel table and the bandwidth it reaches for
what the layer must read and write once. A config that is not valid for a layer says why (from
--trace-compile). For A/B of kernel forms in one device call, e.g. the tensor-core configs
against the tiled ones:

  python3 bench/depthwise_configs.py .gpu/bin/conflux \\
      --configs dw_c4_o8_r8_t256,dw_mma_c16_r16_w32_t256,dw_mma_c16_r8_w32_t256_p

Layers default to ConvNeXt-tiny's first 7x7 layer and MobileNetV2's first 3x3 layer at batch 32
(--layers "32x56x56x96k7s1,32x112x112x32k3s1")."""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# The spec bandwidths and the per-kernel table's row, as depthwise_layers.py reads them.
from depthwise_layers import ROW, SPEC_BANDWIDTH

LAYER = re.compile(r"^(\d+)x(\d+)x(\d+)x(\d+)k(\d+)s(\d+)$")


def make_layer(path, n, h, w, c, k, stride):
    """x [n, h, w, c] -> depthwise k x k conv (pad k // 2, bias) -> [n, oh, ow, c], channels
    last on both sides as inside a network Conflux runs channels last."""
    pad = k // 2
    rng = np.random.default_rng(1)
    weights = numpy_helper.from_array((rng.standard_normal((c, 1, k, k)) * 0.2).astype(np.float32),
                                      "w")
    bias = numpy_helper.from_array(rng.standard_normal(c).astype(np.float32), "b")
    oh = (h + 2 * pad - k) // stride + 1
    ow = (w + 2 * pad - k) // stride + 1
    nodes = [helper.make_node("Transpose", ["x"], ["xt"], perm=[0, 3, 1, 2]),
             helper.make_node("Conv", ["xt", "w", "b"], ["y"], group=c, kernel_shape=[k, k],
                              pads=[pad] * 4, strides=[stride, stride]),
             helper.make_node("Transpose", ["y"], ["out"], perm=[0, 2, 3, 1])]
    graph = helper.make_graph(
        nodes, "depthwise", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, h, w, c])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [n, oh, ow, c])], [weights, bias])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return 2 * (n * h * w * c + n * oh * ow * c + c * k * k + c)


def device_bandwidth():
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                             capture_output=True, text=True).stdout
    except FileNotFoundError:
        return "no GPU", None
    for key, value in SPEC_BANDWIDTH.items():
        if key in out:
            return key, value
    return out.strip() or "unknown", None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("conflux")
    ap.add_argument("--configs", required=True, help="comma-separated perf configs")
    ap.add_argument("--layers", default="32x56x56x96k7s1,32x112x112x32k3s1")
    args = ap.parse_args()
    device, bandwidth = device_bandwidth()
    work = tempfile.mkdtemp()
    print(f"{'layer':22} {'config':30} {'ms':>8} {'GB/s':>7} {'% ' + device:>8}")
    for layer in args.layers.split(","):
        m = LAYER.match(layer)
        if not m:
            sys.exit(f"layer '{layer}' is not NxHxWxCkKsS")
        n, h, w, c, k, stride = map(int, m.groups())
        path = os.path.join(work, f"{layer}.onnx")
        bytes_ = make_layer(path, n, h, w, c, k, stride)
        for config in args.configs.split(","):
            p = subprocess.run([args.conflux, "perf", path, "--fp16", "--narrow-outputs", "--tune",
                                "none", "--perf-config", config, "--trace-compile", "-n", "30",
                                "-t", "8", "--kernel-cache", os.path.join(work, "kernels")],
                               capture_output=True, text=True)
            ms = None
            for line in p.stdout.splitlines():
                r = ROW.match(line)
                if r and config in r[3]:
                    ms = float(r[1])
                    break
            if ms is None:
                why = [l for l in (p.stdout + p.stderr).splitlines()
                       if "not valid" in l or "error" in l.lower()]
                print(f"{layer:22} {config:30} {'-':>8}  {(why or ['not run'])[-1][:90]}")
                continue
            gbs = bytes_ / ms / 1e6
            share = f"{100 * bytes_ / (ms * 1e-3) / bandwidth:7.1f}%" if bandwidth else "      -"
            print(f"{layer:22} {config:30} {ms:8.4f} {gbs:7.0f} {share}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
