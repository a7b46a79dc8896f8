#!/usr/bin/env python3
"""How far `--tune none` (the heuristic's first config) is from quick tuning's winner, from the
`--trace-compile` lines of `conflux perf` logs (bench_zoo.py keeps them, e.g.
results/2026-12-06b_zoo_perf_logs): per log set, the geometric mean of heuristic-first /
tuned time and the count above 1.2x; then the problems whose heuristic first was one of the
memory-bound front tiles, split by whether that tile's grid fills a wave of SMs.

Usage: python3 bench/heuristic_vs_tuned.py LOG... [--sms 132]"""
import argparse
import math
import re

FRONT = {"128x64x32_w2x2_s3_k1": (128, 64), "64x64x32_w2x2_s3_k1": (64, 64),
         "64x32x32_w2x1_s2_k1": (64, 32)}
KEY = re.compile(r": key \S+ \| \S+ \| \S+ \| .*? (?:z\[([\d,]*)\] )?m(\d+) n(\d+) k(\d+)")
CANDIDATE = re.compile(r"candidate (\S+) ([\d.]+) ms")
TUNED = re.compile(r"tuned \d+ configs: (\S+) ([\d.]+) ms \(heuristic.s first (\S+) ([\d.]+) ms\)")


def geomean(values):
    return math.exp(sum(map(math.log, values)) / len(values)) if values else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("logs", nargs="+")
    ap.add_argument("--sms", type=int, default=132)
    args = ap.parse_args()
    ratios, fills, underfills, model_first = [], [], [], []
    for path in args.logs:
        key, order = None, []
        for line in open(path):
            if m := KEY.search(line):
                batch = math.prod(int(x) for x in (m[1] or "").split(",") if x)
                key, order = (int(m[2]), int(m[3]), batch), []
            elif (c := CANDIDATE.search(line)) and key:
                order.append((c[1], float(c[2])))
            elif (t := TUNED.search(line)) and key:
                best, first, first_ms = float(t[2]), t[3], float(t[4])
                ratios.append(first_ms / best)
                if first in FRONT:
                    tm, tn = FRONT[first]
                    tiles = math.ceil(key[0] / tm) * math.ceil(key[1] / tn) * key[2]
                    (fills if tiles >= args.sms else underfills).append(first_ms / best)
                    others = [ms for name, ms in order if name not in FRONT]
                    if tiles < args.sms and others:
                        model_first.append(others[0] / best)
    print(f"{len(ratios)} tuned problems: heuristic first / tuned geomean {geomean(ratios):.3f}, "
          f"{sum(r > 1.2 for r in ratios)} above 1.2x")
    print(f"front tile first, fills a wave: {len(fills)}, geomean {geomean(fills):.3f}")
    print(f"front tile first, does not fill a wave: {len(underfills)}, geomean "
          f"{geomean(underfills):.3f}; the model's own first there: {geomean(model_first):.3f}")


if __name__ == "__main__":
    main()
