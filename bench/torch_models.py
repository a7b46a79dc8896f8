#!/usr/bin/env python3
"""PyTorch side of bench/models_vs_torch.sh (runs on the GPU machine).

    python3 bench/torch_models.py export DIR [MODEL...]
                                                      writes DIR/resnet50.onnx, DIR/encoder.onnx
    python3 bench/torch_models.py time MODEL BATCH    prints JSON lines: eager, torch.compile
                                                      and torch.compile(mode="reduce-overhead")
    python3 bench/torch_models.py reference MODEL BATCH DIR
                                                      writes DIR/input.npy and DIR/torch.npy

MODEL is resnet50 (torchvision, random weights, seed 0, f16, channels-last) or encoder
(nn.TransformerEncoder: 12 layers, hidden 768, 12 heads, FFN 3072, sequence 128, f16).
"""
import json
import sys

import numpy as np
import torch


def build(name):
    torch.manual_seed(0)
    if name == "resnet50":
        import torchvision
        model = torchvision.models.resnet50(weights=None)
    else:
        layer = torch.nn.TransformerEncoderLayer(768, 12, 3072, dropout=0.0, batch_first=True,
                                                 activation="gelu")
        model = torch.nn.TransformerEncoder(layer, 12, enable_nested_tensor=False)
    return model.eval().half().cuda()


def example(name, batch):
    g = torch.Generator(device="cuda").manual_seed(1)
    if name == "resnet50":
        return torch.randn(batch, 3, 224, 224, device="cuda", generator=g).half()
    return torch.randn(batch, 128, 768, device="cuda", generator=g).half()


def export(out_dir, names):
    # The encoder's inference fast path (aten::_transformer_encoder_layer_fwd) has no ONNX
    # export; the exported graph is the same computation through its plain ops.
    torch.backends.mha.set_fastpath_enabled(False)
    for name in names:
        model = build(name)
        x = example(name, 2)
        path = f"{out_dir}/{name}.onnx"
        with torch.no_grad():
            try:
                torch.onnx.export(model, (x,), path, input_names=["input"],
                                  output_names=["output"], opset_version=17,
                                  dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}},
                                  dynamo=False)
            except Exception as e:  # report and go on with the other model
                print(f"export of {name} failed: {type(e).__name__}: {e}", file=sys.stderr)
                continue
        print(f"exported {path}", file=sys.stderr)


def timed(fn, x, warmup=10, reps=50):
    """(per-call ms, queued ms): the median of calls each synchronised on its own (what one
    request waits, Python launch time included), and the mean of `reps` calls queued back to back
    between two events (what a stream of requests gets; Conflux's replays are timed queued)."""
    with torch.no_grad():
        for _ in range(warmup):
            fn(x)
        torch.cuda.synchronize()
        times = []
        for _ in range(reps):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn(x)
            b.record()
            torch.cuda.synchronize()
            times.append(a.elapsed_time(b))
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(reps):
            fn(x)
        b.record()
        torch.cuda.synchronize()
    return float(np.median(times)), a.elapsed_time(b) / reps


def time_model(name, batch):
    model = build(name)
    x = example(name, batch)
    if name == "resnet50":
        model = model.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    # reduce-overhead is Inductor with CUDA graphs, as Conflux replays one graph per run: the
    # strongest PyTorch mode and the one issue 17's bars name.
    for variant, fn in (("torch_eager", model), ("torch_compile", torch.compile(model)),
                        ("torch_compile_reduce_overhead",
                         torch.compile(model, mode="reduce-overhead"))):
        try:
            ms, queued_ms = timed(fn, x)
        except Exception as e:
            print(json.dumps({"model": name, "batch": batch, "variant": variant,
                              "error": f"{type(e).__name__}: {e}"[:300]}))
            continue
        print(json.dumps({"model": name, "batch": batch, "variant": variant, "ms": ms,
                          "per_s": 1000.0 * batch / ms, "queued_ms": queued_ms,
                          "queued_per_s": 1000.0 * batch / queued_ms}), flush=True)


def reference(name, batch, out_dir):
    model = build(name)
    x = example(name, batch)
    with torch.no_grad():
        y = model(x)
    np.save(f"{out_dir}/input.npy", x.cpu().numpy())
    np.save(f"{out_dir}/torch.npy", y.float().cpu().numpy())


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "export":
        export(sys.argv[2], sys.argv[3:] or ["resnet50", "encoder"])
    elif cmd == "time":
        time_model(sys.argv[2], int(sys.argv[3]))
    elif cmd == "reference":
        reference(sys.argv[2], int(sys.argv[3]), sys.argv[4])
