#!/usr/bin/env python3
"""Gathers one run of bench/models_vs_torch.sh into one JSON record for bench/results/.

    python3 bench/collect_models.py OUT_DIR COMMIT DEVICE > bench/results/DATE_models.json

Reads OUT_DIR/torch.jsonl (PyTorch's lines) and OUT_DIR/perf_<model>_<batch>.txt (conflux perf's
output) and writes {"date", "commit", "device", "figures": [{"model", "batch", "variant",
"ms", "per_s"}, ...]}; bench/compare compares two such records.
"""
import datetime
import glob
import json
import os
import re
import sys


def conflux_figures(out_dir):
    for path in sorted(glob.glob(os.path.join(out_dir, "perf_*_*.txt"))):
        model, batch = re.match(r"perf_(.+)_(\d+)\.txt$", os.path.basename(path)).groups()
        text = open(path).read()
        latency = re.search(r"^latency: median ([0-9.]+) ms", text, re.M)
        if not latency:
            continue
        ms = float(latency.group(1))
        yield {"model": model, "batch": int(batch), "variant": "conflux", "ms": ms,
               "per_s": 1000.0 * int(batch) / ms}
        eager = re.search(r"^without the CUDA graph: median ([0-9.]+) ms", text, re.M)
        if eager:
            ms = float(eager.group(1))
            yield {"model": model, "batch": int(batch), "variant": "conflux_no_graph", "ms": ms,
                   "per_s": 1000.0 * int(batch) / ms}


def torch_figures(out_dir):
    path = os.path.join(out_dir, "torch.jsonl")
    if not os.path.exists(path):
        return
    for line in open(path):
        line = line.strip()
        if line.startswith("{"):
            r = json.loads(line)
            if "ms" in r:
                yield {k: r[k] for k in ("model", "batch", "variant", "ms", "per_s")}
            # Calls queued back to back, as Conflux's replays are timed.
            if "queued_ms" in r:
                yield {"model": r["model"], "batch": r["batch"], "variant": r["variant"] + "_queued",
                       "ms": r["queued_ms"], "per_s": r["queued_per_s"]}


def main():
    out_dir, commit, device = sys.argv[1:4]
    record = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
              "commit": commit, "device": device,
              "figures": list(torch_figures(out_dir)) + list(conflux_figures(out_dir))}
    json.dump(record, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
