#!/usr/bin/env python3
"""Joins conflux_bench_conv_layers' JSON lines with bench/torch_conv_layers.py's and prints, per
layer: torch conv ms, Conflux conv ms (best of the configs tried, and the heuristic's), the conv
throughput ratio (Conflux / cuDNN), torch unfused ms, Conflux fused ms, the fused time ratio
(Conflux / torch), geometric means of both ratios, and whether the targets hold (fused geo-mean
time ratio <= 1.0, conv-alone geo-mean throughput ratio >= 0.6). With several torch runs (before
and after Conflux's, to see drift) each layer's fastest torch time is the baseline.

With --cubins, counts the tensor-core instructions (HMMA, and HGMMA for wgmma) in the SASS of
the best and the heuristic config's kernels, with cuobjdump --dump-sass.

  compare_conv_layers.py --conflux conflux.jsonl --torch t1.jsonl [t2.jsonl]
                         [--cubins DIR] [--cuobjdump PATH]
"""
import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys

FUSED_TARGET = 1.0  # Conflux fused / torch unfused time, geo-mean, at most
CONV_TARGET = 0.6  # Conflux conv / cuDNN throughput, geo-mean, at least


def json_lines(path):
    rows = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                rows.append(json.loads(line))
    return rows


def fusion_of(path):
    """layer -> how the heuristic compiled the fused variant, from the bench's trace lines."""
    result = {}
    with open(path) as f:
        for line in f:
            m = re.match(r"trace (\S+) \(heuristic\): .* -> (fused|2-way|3-way)", line)
            if m:
                result[m.group(1)] = m.group(2)
    return result


def geomean(values):
    values = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def fmt(v, digits=3):
    return "-" if v is None else f"{v:.{digits}f}"


def sass_counts(cuobjdump, cubin):
    out = subprocess.run([cuobjdump, "--dump-sass", cubin], capture_output=True, text=True)
    if out.returncode != 0:
        return None, out.stderr.strip().splitlines()[-1:] or ["cuobjdump failed"]
    hmma = len(re.findall(r"\bHMMA\.", out.stdout))
    hgmma = len(re.findall(r"\bHGMMA\.", out.stdout))
    return (hmma, hgmma), None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--conflux", required=True)
    ap.add_argument("--torch", nargs="+", required=True)
    ap.add_argument("--cubins", help="conflux_bench_conv_layers --dump-cubins DIR")
    ap.add_argument("--cuobjdump", default=shutil.which("cuobjdump") or "/usr/local/cuda/bin/cuobjdump")
    args = ap.parse_args()

    torch_runs = [json_lines(p) for p in args.torch]
    torch = {}  # (layer, variant) -> fastest ms over the runs
    for run in torch_runs:
        for r in run:
            key = (r["layer"], r["variant"])
            torch[key] = min(torch.get(key, math.inf), r["ms"])
    conflux_rows = [r for r in json_lines(args.conflux) if "ms" in r]
    failed = [r for r in json_lines(args.conflux) if "error" in r]
    best, heur = {}, {}
    layers = []
    for r in conflux_rows:
        key = (r["layer"], r["variant"])
        if r["layer"] not in layers:
            layers.append(r["layer"])
        if key not in best or r["ms"] < best[key]["ms"]:
            best[key] = r
        if r["heuristic"]:
            heur[key] = r
    fusion = fusion_of(args.conflux)

    head = (f"{'layer':<22} {'torch':>7} {'cx best':>8} {'cx heur':>8} {'conv x':>6}  "
            f"{'t unfus':>8} {'cx fused':>8} {'fu heur':>8} {'fused /':>7} {'launch':>6} fusion")
    print(head)
    print("-" * len(head))
    conv_ratio, conv_ratio_h, fused_ratio, fused_ratio_h = [], [], [], []
    for layer in layers:
        tc, tu = torch.get((layer, "torch_conv")), torch.get((layer, "torch_unfused"))
        cb, ch = best.get((layer, "conv")), heur.get((layer, "conv"))
        fb, fh = best.get((layer, "fused")), heur.get((layer, "fused"))
        # Same FLOPs on both sides, so the throughput ratio is the inverse time ratio.
        cr = tc / cb["ms"] if tc and cb else None
        fr = fb["ms"] / tu if tu and fb else None
        if cr:
            conv_ratio.append(cr)
        if fr:
            fused_ratio.append(fr)
        if tc and ch:
            conv_ratio_h.append(tc / ch["ms"])
        if tu and fh:
            fused_ratio_h.append(fh["ms"] / tu)
        print(f"{layer:<22} {fmt(tc):>7} {fmt(cb and cb['ms']):>8} {fmt(ch and ch['ms']):>8} "
              f"{fmt(cr, 2):>6}  {fmt(tu):>8} {fmt(fb and fb['ms']):>8} "
              f"{fmt(fh and fh['ms']):>8} {fmt(fr, 2):>7} {fb['launches'] if fb else '-':>6} "
              f"{fusion.get(layer, '?')}")
    print()
    g_conv, g_fused = geomean(conv_ratio), geomean(fused_ratio)
    g_conv_h, g_fused_h = geomean(conv_ratio_h), geomean(fused_ratio_h)
    print(f"conv throughput ratio (Conflux / cuDNN), geo-mean: best {g_conv:.3f}, "
          f"heuristic {g_conv_h:.3f}  (target >= {CONV_TARGET})")
    print(f"fused time ratio (Conflux / torch unfused), geo-mean: best {g_fused:.3f}, "
          f"heuristic {g_fused_h:.3f}  (target <= {FUSED_TARGET})")
    for what, value, ok in (
            ("conv-alone target (best config)", g_conv, g_conv >= CONV_TARGET),
            ("conv-alone target (heuristic)", g_conv_h, g_conv_h >= CONV_TARGET),
            ("fused target (best config)", g_fused, g_fused <= FUSED_TARGET),
            ("fused target (heuristic)", g_fused_h, g_fused_h <= FUSED_TARGET)):
        print(f"{what:<34} {value:.3f}  {'MET' if ok else 'NOT MET'}")
    if len(torch_runs) > 1:
        drift = []
        for key in torch:
            times = [r["ms"] for run in torch_runs for r in run
                     if (r["layer"], r["variant"]) == key]
            if len(times) > 1:
                drift.append((max(times) / min(times) - 1, key))
        if drift:
            worst = max(drift)
            print(f"torch drift between runs: max {worst[0] * 100:.1f}% ({worst[1][0]} "
                  f"{worst[1][1]}), mean {sum(d for d, _ in drift) / len(drift) * 100:.1f}%")
    if failed:
        print(f"{len(failed)} Conflux compile failure(s): " +
              ", ".join(f"{r['layer']} {r['variant']} {r['config']}" for r in failed))

    if args.cubins:
        print()
        if not os.path.exists(args.cuobjdump):
            print(f"SASS check skipped: no cuobjdump at {args.cuobjdump}")
            return
        print("SASS check (tensor-core instructions per kernel, best and heuristic configs):")
        seen = set()
        for layer in layers:
            for variant in ("conv", "fused"):
                for tag, row in (("best", best.get((layer, variant))),
                                 ("heuristic", heur.get((layer, variant)))):
                    if not row or "cubins" not in row or row["cubins"] in seen:
                        continue
                    seen.add(row["cubins"])
                    tags = "best+heuristic" if row is heur.get((layer, variant)) and \
                        row is best.get((layer, variant)) else tag
                    for name in sorted(os.listdir(row["cubins"])):
                        counts, error = sass_counts(args.cuobjdump,
                                                    os.path.join(row["cubins"], name))
                        what = (f"HMMA {counts[0]:>4} HGMMA {counts[1]:>4}" if counts
                                else f"error: {error}")
                        print(f"  {layer:<22} {variant:<5} {row['config']:<28} {tags:<14} "
                              f"{name:<36} {what}")


if __name__ == "__main__":
    sys.exit(main())
