#!/usr/bin/env python3
"""The transformer GEMMs of the zoo (ViT-B/16 and BERT-base at batch 32, f16) with the
epilogues their models fuse, timed per perf config through `conflux perf --perf-config`, next to
torch.matmul (cuBLAS) and torch's eager and compiled forms of the same fused op.

    python3 bench/gemm_epilogue_configs.py CONFLUX WORKDIR [--configs A,B,...] [--json OUT]

Each case is one small ONNX model (MatMul, then the epilogue), so the kernel conflux perf times
is the fused GEMM alone. Run on the GPU machine; the models are made there with onnx."""
import argparse
import json
import os
import re
import subprocess
import sys

import numpy as np

# (name, M rows as [batch, sequence], K, N, epilogue)
CASES = [
    ("vit_ffn_up_gelu", (32, 197), 768, 3072, "bias_gelu"),
    ("vit_ffn_up_bare", (32, 197), 768, 3072, "none"),
    ("vit_ffn_down_residual", (32, 197), 3072, 768, "bias_residual"),
    ("vit_qkv_bias", (32, 197), 768, 2304, "bias"),
    ("bert_ffn_up_gelu", (32, 128), 768, 3072, "bias_gelu"),
    # The language models' output projections (batch 32 x 128 tokens): f32 logits as the
    # exported graphs return them, and f16 to tell the f32 stores' share.
    ("llama_lm_head_f32", (32, 128), 512, 32000, "cast_f32"),
    ("llama_lm_head", (32, 128), 512, 32000, "none"),
    ("gpt2_lm_head_f32", (32, 128), 768, 50257, "cast_f32"),
]

DEFAULT_CONFIGS = [
    "128x256x64_w8x1_s3_k1_wgmma", "128x256x64_w8x1_s4_k1_wgmma", "128x256x64_w4x2_s3_k1_wgmma",
    "128x192x64_w8x1_s4_k1_wgmma", "128x128x64_w8x1_s3_k1_wgmma", "128x128x64_w8x1_s4_k1_wgmma",
    "64x256x64_w4x1_s4_k1_wgmma", "64x128x64_w4x1_s4_k1_wgmma", "256x128x64_w8x1_s3_k1_wgmma",
    "256x128x64_w8x1_s4_k1_wgmma", "128x256x32_w2x4_s3_k1", "128x128x32_w2x2_s4_k1",
]


def make_model(path, rows, k, n, epilogue):
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array((rng.standard_normal((k, n)) * k**-0.5).astype(np.float16),
                                     "W")]
    nodes = [helper.make_node("MatMul", ["x", "W"], ["mm"])]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [*rows, k])]
    last = "mm"
    if epilogue.startswith("bias"):
        inits.append(numpy_helper.from_array(
            (rng.standard_normal(n) * 0.1).astype(np.float16), "B"))
        nodes.append(helper.make_node("Add", [last, "B"], ["biased"]))
        last = "biased"
    if epilogue == "bias_gelu":
        nodes.append(helper.make_node("Gelu", [last], ["y"]))
        last = "y"
    if epilogue == "bias_residual":
        inputs.append(helper.make_tensor_value_info("r", TensorProto.FLOAT16, [*rows, n]))
        nodes.append(helper.make_node("Add", [last, "r"], ["y"]))
        last = "y"
    out_type = TensorProto.FLOAT16
    if epilogue == "cast_f32":
        nodes.append(helper.make_node("Cast", [last], ["y"], to=TensorProto.FLOAT))
        last, out_type = "y", TensorProto.FLOAT
    outputs = [helper.make_tensor_value_info(last, out_type, [*rows, n])]
    graph = helper.make_graph(nodes, "gemm_epilogue", inputs, outputs, inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)]), path)


def conflux_ms(conflux, model, config):
    args = [conflux, "perf", model, "--tune", "none", "-n", "200", "-t", "1", "--quiet"]
    if config:
        args += ["--perf-config", config]
    p = subprocess.run(args, capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        return None, (p.stderr or p.stdout).strip().splitlines()[-1:]
    # The kernel's own time (the first launch line), not the graph's.
    for line in p.stdout.splitlines():
        m = re.match(r"\s+[\d.]+%\s+([\d.]+)\s+gemm", line)
        if m:
            return float(m.group(1)), None
    return None, ["no kernel line in conflux perf's output"]


def torch_ms(rows, k, n, epilogue):
    import torch
    import torch.nn.functional as F
    x = torch.randn(*rows, k, device="cuda", dtype=torch.half)
    w = torch.randn(k, n, device="cuda", dtype=torch.half) * k**-0.5
    b = torch.randn(n, device="cuda", dtype=torch.half) * 0.1
    r = torch.randn(*rows, n, device="cuda", dtype=torch.half)

    def fused(x):
        y = x @ w
        if epilogue == "cast_f32":
            return y.float()
        if epilogue.startswith("bias"):
            y = y + b
        if epilogue == "bias_gelu":
            y = F.gelu(y)
        if epilogue == "bias_residual":
            y = y + r
        return y

    def timed(fn):
        for _ in range(20):
            fn(x)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        best = []
        for _ in range(5):
            start.record()
            for _ in range(100):
                fn(x)
            end.record()
            torch.cuda.synchronize()
            best.append(start.elapsed_time(end) / 100)
        return sorted(best)[len(best) // 2]

    compiled = torch.compile(fused)
    return {"matmul": timed(lambda x: x @ w), "eager": timed(fused), "compiled": timed(compiled)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("conflux")
    ap.add_argument("work")
    ap.add_argument("--configs", default=",".join(DEFAULT_CONFIGS))
    ap.add_argument("--cases", default="")
    ap.add_argument("--json")
    ap.add_argument("--no-torch", action="store_true", help="conflux's times only")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    configs = [""] + [c for c in args.configs.split(",") if c]
    records = []
    for name, rows, k, n, epilogue in CASES:
        if args.cases and name not in args.cases.split(","):
            continue
        model = os.path.join(args.work, name + ".onnx")
        make_model(model, rows, k, n, epilogue)
        rec = {"case": name, "m": int(np.prod(rows)), "n": n, "k": k, "epilogue": epilogue,
               "conflux": {}}
        try:
            rec["torch"] = {} if args.no_torch else torch_ms(rows, k, n, epilogue)
        except Exception as e:  # noqa: BLE001 - the table still shows conflux's numbers
            rec["torch"] = {"error": str(e).splitlines()[0]}
        for c in configs:
            ms, err = conflux_ms(args.conflux, model, c)
            rec["conflux"][c or "heuristic"] = ms if ms is not None else " ".join(err)
        records.append(rec)
        t = rec["torch"]
        flop = 2.0 * rec["m"] * n * k
        print(f"{name}: m{rec['m']} n{n} k{k} {epilogue}; torch matmul "
              f"{t.get('matmul', float('nan')):.4f} ms ({flop / t.get('matmul', 1) / 1e9:.0f} "
              f"TFLOP/s), eager {t.get('eager', float('nan')):.4f}, compiled "
              f"{t.get('compiled', float('nan')):.4f}", flush=True)
        for c, ms in rec["conflux"].items():
            if isinstance(ms, float):
                print(f"    {c:32s} {ms:.4f} ms  {flop / ms / 1e9:5.0f} TFLOP/s", flush=True)
            else:
                print(f"    {c:32s} {ms}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(records, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
