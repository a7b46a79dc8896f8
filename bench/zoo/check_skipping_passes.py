#!/usr/bin/env python3
"""Which pass a zoo model's failed check comes from: exports the model (bench_zoo.py's prepare:
PyTorch's f32 output is the answer), then runs `conflux run --fp16` on it once as it is and once
per pass left out with --skip-pass, with the same problem cache (the same configs), and prints
each run's relative RMS against PyTorch and whether it is within bench_zoo.py's tolerance.

Usage: python3 bench/zoo/check_skipping_passes.py WORK --conflux BIN --model NAME [--batch 1]
           [--tune quick|none] [--problem-cache F] [--skip split_reduction,fuse_gemm,...]
"""
import argparse
import importlib.util
import os
import re
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def bench_zoo():
    spec = importlib.util.spec_from_file_location("bench_zoo", os.path.join(HERE, "bench_zoo.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("work")
    ap.add_argument("--conflux", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--tune", default="quick")
    ap.add_argument("--problem-cache")
    ap.add_argument("--skip", default="split_reduction,fuse_attention,fuse_gemm,fuse_pointwise")
    args = ap.parse_args()
    bz = bench_zoo()
    record = bz.prepare(args.model, args.work, [args.batch])
    if "error" in record:
        sys.exit(f"{args.model}: export failed: {record['error']}")
    info = record["batches"][str(args.batch)]
    folder = os.path.join(args.work, args.model)
    want = np.load(os.path.join(folder, f"torch_f32_{args.batch}.npy"))
    tolerance = max(1e-2, 2 * info["torch_f16_rel_rms"])
    caches = ["--problem-cache", args.problem_cache] if args.problem_cache else []
    print(f"{args.model} batch {args.batch} ({record['export']}): tolerance {tolerance:.1e}, "
          f"PyTorch f16 {info['torch_f16_rel_rms']:.1e}")
    failed = False
    for skip in [""] + args.skip.split(","):
        extra = ["--skip-pass", skip] if skip else []
        out_dir = os.path.join(folder, f"check_{skip or 'all'}")
        p = subprocess.run([args.conflux, "run", os.path.join(folder, "model.onnx"), "--output-dir",
                            out_dir] + bz.conflux_args(info["inputs"], args.tune, caches) + extra,
                           capture_output=True, text=True)
        label = f"without {skip}" if skip else "every pass"
        if p.returncode != 0:
            print(f"  {label:28s} error: {bz.last_line(p.stderr + p.stdout)}")
            failed = True
            continue
        got = np.load(re.findall(r"^wrote (.*\.npy)", p.stdout, re.M)[0])
        rms = bz.relative_rms(got, want)
        print(f"  {label:28s} rel RMS {rms:.2e}  {'pass' if rms <= tolerance else 'FAIL'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
