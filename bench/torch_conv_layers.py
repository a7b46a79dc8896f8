#!/usr/bin/env python3
"""Times ResNet-50's conv layers in PyTorch eager (f16, channels_last, cuDNN with
cudnn.benchmark) as the baseline for conflux_bench_conv_layers. The layer list comes from
`conflux_bench_conv_layers --list` (a file path argument, or stdin), so both sides time the same
shapes. Per layer, two variants, each the median of 50 runs after 10 warm-ups, timed with CUDA
events:
  torch_conv     F.conv2d(x, w, stride, padding), no bias
  torch_unfused  conv, + bias, + residual, relu as separate eager ops
Prints one JSON object per line: {"layer", "variant", "ms", "tflops", ...}."""
import json
import sys

import torch
import torch.nn.functional as F

WARMUP, REPS = 10, 50


def median_ms(fn):
    for _ in range(WARMUP):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(REPS):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(stop))
    times.sort()
    mid = len(times) // 2
    return times[mid] if len(times) % 2 else (times[mid - 1] + times[mid]) / 2


def main():
    source = sys.argv[1] if len(sys.argv) > 1 and sys.argv[1] != "-" else None
    spec = json.load(open(source) if source else sys.stdin)
    batch = spec["batch"]
    torch.backends.cudnn.benchmark = True
    torch.manual_seed(0)
    dev, dt, cl = "cuda", torch.float16, torch.channels_last
    print(f"# torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, "
          f"{torch.cuda.get_device_name()}", file=sys.stderr)
    for i, layer in enumerate(spec["layers"]):
        print(f"[{i + 1}/{len(spec['layers'])}] {layer['name']}", file=sys.stderr)
        c, k, r, s = layer["c"], layer["k"], layer["r"], layer["s"]
        stride, pad = layer["stride"], layer["pad"]
        x = torch.randn(batch, c, layer["h"], layer["w"], device=dev, dtype=dt).to(
            memory_format=cl)
        w = (torch.randn(k, c, r, s, device=dev, dtype=dt) / (c * r * s) ** 0.5).to(
            memory_format=cl)
        b = torch.randn(k, device=dev, dtype=dt)
        res = torch.randn(batch, k, layer["oh"], layer["ow"], device=dev, dtype=dt).to(
            memory_format=cl)
        assert F.conv2d(x, w, stride=stride, padding=pad).shape == res.shape, layer["name"]

        def conv():
            return F.conv2d(x, w, stride=stride, padding=pad)

        def unfused():
            y = F.conv2d(x, w, stride=stride, padding=pad)
            y = y + b.view(1, -1, 1, 1)
            y = y + res
            return torch.relu(y)

        for variant, fn in (("torch_conv", conv), ("torch_unfused", unfused)):
            with torch.no_grad():
                ms = median_ms(fn)
            print(json.dumps({"layer": layer["name"], "variant": variant, "ms": ms,
                              "tflops": layer["flops"] / ms / 1e9, "batch": batch}), flush=True)
        del x, w, b, res
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
