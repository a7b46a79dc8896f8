#!/usr/bin/env python3
"""The depthwise convolution layers of ConvNeXt-tiny, MobileNetV2 and EfficientNet-B0 at batch
32 in f16, one layer (with its bias, between channels-last tensors) per ONNX model: Conflux's depthwise kernel (`conflux perf
--fp16 --narrow-outputs`, f16 in and out, the layer's launch from the per-kernel table) against PyTorch's F.conv2d (f16,
channels last, cuDNN benchmark) in the same process tree, and the memory bandwidth each reaches
for what the layer must read and write once (input, output, weights, bias). Run on the GPU
machine: python3 bench/depthwise_layers.py CONFLUX [--tune quick] [--json F]."""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

# Spec memory bandwidth by device name (bytes/s): the H200's HBM3e, the H100 SXM's HBM3.
SPEC_BANDWIDTH = {"H200": 4.8e12, "H100": 3.35e12}


def spec_bandwidth():
    import torch
    name = torch.cuda.get_device_name()
    for key, value in SPEC_BANDWIDTH.items():
        if key in name:
            return key, value
    raise SystemExit(f"no spec bandwidth known for {name}: add it to SPEC_BANDWIDTH")
BATCH = 32

# (model, h, channels, kernel, stride)
LAYERS = [
    ("convnext_tiny", 56, 96, 7, 1), ("convnext_tiny", 28, 192, 7, 1),
    ("convnext_tiny", 14, 384, 7, 1), ("convnext_tiny", 7, 768, 7, 1),
    ("mobilenet_v2", 112, 32, 3, 1), ("mobilenet_v2", 112, 96, 3, 2),
    ("mobilenet_v2", 56, 144, 3, 1), ("mobilenet_v2", 28, 192, 3, 1),
    ("mobilenet_v2", 14, 576, 3, 1), ("mobilenet_v2", 7, 960, 3, 1),
    ("efficientnet_b0", 28, 240, 5, 1), ("efficientnet_b0", 14, 672, 5, 1),
    ("efficientnet_b0", 7, 1152, 5, 1),
]


def layer_bytes(h, c, k, stride, elem=2):
    o = (h + 2 * (k // 2) - k) // stride + 1
    return elem * (BATCH * h * h * c + BATCH * o * o * c + c * k * k + c)


def export(path, h, c, k, stride):
    """The layer between channels-last tensors, as inside a network whose layers Conflux runs
    channels last (its input and output permutes cancel against the convolution's own), so
    neither the load nor the store is a transpose."""
    import torch

    class Layer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(c, c, k, stride=stride, padding=k // 2, groups=c)

        def forward(self, x):
            return self.conv(x.permute(0, 3, 1, 2)).permute(0, 2, 3, 1)

    conv = Layer().eval()
    x = torch.randn(BATCH, h, h, c)
    torch.onnx.export(conv, (x,), path, dynamo=False, opset_version=17, input_names=["x"])
    return conv


def time_torch(conv, h, c):
    import torch
    torch.backends.cudnn.benchmark = True
    m = conv.conv.half().cuda().to(memory_format=torch.channels_last)
    x = torch.randn(BATCH, c, h, h, device="cuda", dtype=torch.half).to(
        memory_format=torch.channels_last)
    with torch.no_grad():
        for _ in range(10):
            m(x)
        torch.cuda.synchronize()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        windows = []
        for _ in range(5):
            s.record()
            for _ in range(50):
                m(x)
            e.record()
            e.synchronize()
            windows.append(s.elapsed_time(e) / 50)
    return sorted(windows)[2]


ROW = re.compile(r"^\s*[\d.]+%\s+([\d.]+)\s+(\S+)\s+(.*?)\s{2,}(\S.*)$")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("conflux")
    ap.add_argument("--tune", default="quick")
    ap.add_argument("--json")
    args = ap.parse_args()
    work = tempfile.mkdtemp()
    rows = []
    device, bandwidth = spec_bandwidth()
    print(f"{'layer':34} {'config':22} {'conflux ms':>10} {'GB/s':>7} {'% ' + device:>7} "
          f"{'torch ms':>9} {'GB/s':>7}")
    for model, h, c, k, stride in LAYERS:
        name = f"{model} {k}x{k}/{stride} {h}x{h}x{c}"
        path = os.path.join(work, f"dw_{h}_{c}_{k}_{stride}.onnx")
        conv = export(path, h, c, k, stride)
        # --narrow-outputs: the layer's output stays f16, as inside a network (without it the
        # kernel writes f32 outputs, 1.5x the bytes layer_bytes counts for a stride-1 layer).
        p = subprocess.run([args.conflux, "perf", path, "--fp16", "--narrow-outputs", "--tune",
                            args.tune, "-n", "50",
                            "-t", "8", "--quiet", "--kernel-cache", os.path.join(work, "k")],
                           capture_output=True, text=True)
        kernel = None
        for line in p.stdout.split(" share ", 1)[-1].splitlines()[1:]:
            r = ROW.match(line)
            if r and ("dw_" in r[3] or r[2] in ("convolution", "gemm_fused", "gemm")):
                kernel = (float(r[1]), r[3].strip())
                break
        bytes_ = layer_bytes(h, c, k, stride)
        torch_ms = time_torch(conv, h, c)
        row = {"layer": name, "bytes": bytes_, "torch_ms": torch_ms,
               "torch_gbs": bytes_ / torch_ms / 1e6}
        if kernel is None:
            row["error"] = (p.stderr + p.stdout).strip().splitlines()[-1:] or ["no kernel row"]
            print(f"{name:34} no depthwise kernel found: {row['error']}")
        else:
            ms, config = kernel
            row.update(conflux_ms=ms, config=config, conflux_gbs=bytes_ / ms / 1e6,
                       share_of_spec=bytes_ / (ms * 1e-3) / bandwidth, device=device)
            print(f"{name:34} {config:22} {ms:10.4f} {row['conflux_gbs']:7.0f} "
                  f"{100 * row['share_of_spec']:6.1f}% {torch_ms:9.4f} {row['torch_gbs']:7.0f}")
        rows.append(row)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
