#!/usr/bin/env python3
"""Runs Conflux over the full-size zoo that make_zoo.py exported and prints the table for
bench/ZOO.md. Per case, two independent checks:
  verify  `conflux verify`: the cuda target against Conflux's reference target, each output
          judged by the precision that ran (TF32 for f32 convolutions/matmuls by default)
  ort     `conflux run --output-dir` against onnxruntime's CPU outputs: f32 cases with
          --exact-fp32 within f32's tolerance (1e-3); f16 cases against the f32 outputs of the
          same weights, within twice the distance of the reference target's f16 result from
          them (at least 1e-2): what f16 itself does to the model
A case passes when both pass. Cases run a few at a time: verify's reference target is a CPU
interpreter, so the GPU would otherwise idle.

Usage: python3 bench/zoo/run_zoo.py ZOO_DIR --conflux build/bin/conflux [--jobs N]
           [--markdown FILE] [--json FILE] [--timeout S] [-- extra conflux options]
"""
import argparse
import concurrent.futures as futures
import glob
import json
import os
import re
import subprocess
import sys
import time

import numpy as np

# What `conflux verify` judges by (src/ir/output_comparison.cpp): the ort check uses the same.
TOLERANCE = {"f32": 1e-3, "tf32": 1e-2, "f16": 1e-2, "bf16": 2e-2}


def conflux_args(case, folder):
    args = []
    for i in case["inputs"]:
        args += ["--input", f"{i['name']}={os.path.join(folder, i['file'])}"]
        if case.get("dynamic"):
            args += ["--input-dim", f"{i['name']}:{','.join(str(d) for d in i['shape'])}"]
    return args


def first_error(text):
    for line in text.splitlines():
        if "error" in line.lower() or "unsupported" in line.lower() or "fail" in line.lower():
            return line.strip()[:240]
    lines = [l for l in text.splitlines() if l.strip()]
    return lines[-1].strip()[:240] if lines else ""


VERIFY_ROW = re.compile(
    r"^(\S+)\s+\w*\[[^\]]*\]\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(pass|FAIL)")


def run_verify(conflux, case, folder, extra, timeout):
    cmd = [conflux, "verify", os.path.join(folder, "model.onnx"), "--tune", "none", "--quiet"]
    cmd += conflux_args(case, folder) + extra
    start = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"status": "timeout", "seconds": timeout, "error": f"over {timeout} s"}
    with open(os.path.join(folder, "verify.log"), "w") as f:
        f.write(" ".join(cmd) + "\n" + p.stdout + p.stderr)
    out = {"seconds": round(time.monotonic() - start, 1), "exit": p.returncode, "rows": []}
    for line in p.stdout.splitlines():
        m = VERIFY_ROW.match(line)
        if m:
            out["rows"].append({"output": m[1], "precision": m[2], "rel_rms": float(m[3]),
                                "noise": float(m[5]), "tolerance": float(m[6]),
                                "result": m[7]})
    out["status"] = {0: "pass", 1: "FAIL", 2: "user error"}.get(p.returncode, "crash")
    if p.returncode != 0:
        out["error"] = first_error(p.stderr + "\n" + p.stdout)
    return out


def run_outputs(conflux, case, folder, extra, timeout, target, subdir):
    """`conflux run --output-dir` on `target`: (the outputs, in the model's order, or None;
    a failure record or None)."""
    got_dir = os.path.join(folder, subdir)
    cmd = [conflux, "run", os.path.join(folder, "model.onnx"), "--target", target, "--quiet",
           "--output-dir", got_dir] + conflux_args(case, folder)
    if target == "cuda":
        cmd += ["--tune", "none"]
        if case["dtype"] == "f32":
            cmd.append("--exact-fp32")  # f32 against f32: no TF32 rounding to hide anything
    cmd += extra
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, {"status": "timeout", "error": f"over {timeout} s"}
    with open(os.path.join(folder, f"{subdir}.log"), "w") as f:
        f.write(" ".join(cmd) + "\n" + p.stdout + p.stderr)
    if p.returncode != 0:
        return None, {"status": {2: "user error"}.get(p.returncode, "crash"),
                      "error": first_error(p.stderr + "\n" + p.stdout)}
    written = re.findall(r"^wrote (.*\.npy)", p.stdout, re.M)
    if len(written) != len(case["outputs"]):
        return None, {"status": "FAIL", "error": f"{len(written)} outputs, onnxruntime has "
                                                 f"{len(case['outputs'])}"}
    return [np.load(path).astype(np.float64) for path in written], None


def distance_to_ort(values, case, folder):
    """The worst output's relative RMS against onnxruntime's, or a failure record."""
    worst = 0.0
    for got, info in zip(values, case["outputs"]):
        want = np.load(os.path.join(folder, info["file"])).astype(np.float64)
        if got.shape != want.shape:
            return None, {"status": "FAIL", "error": f"output '{info['name']}' has shape "
                                                     f"{got.shape}, onnxruntime {want.shape}"}
        if not np.all(np.isfinite(got)):
            return None, {"status": "FAIL", "error": f"output '{info['name']}' has NaN/Inf"}
        norm = np.sqrt(np.mean(want * want))
        rms = np.sqrt(np.mean((got - want) ** 2))
        worst = max(worst, rms / norm if norm > 0 else rms)
    return worst, None


def run_against_ort(conflux, case, folder, extra, timeout):
    """f32: cuda with --exact-fp32 within f32's tolerance. f16: the f16 model (weights and all)
    is another model than the f32 one onnxruntime ran; the reference target shows how far f16
    takes it from the f32 answer, and cuda must come within twice that (at least 1e-2)."""
    got, failed = run_outputs(conflux, case, folder, extra, timeout, "cuda", "got")
    if failed:
        return failed
    rms, failed = distance_to_ort(got, case, folder)
    if failed:
        return failed
    tol, ref_rms = TOLERANCE["f32"], None
    if case["dtype"] != "f32":
        ref, failed = run_outputs(conflux, case, folder, [], timeout, "ref", "ref_got")
        if failed:
            return {**failed, "error": "reference target: " + failed.get("error", "")}
        ref_rms, failed = distance_to_ort(ref, case, folder)
        if failed:
            return {**failed, "error": "reference target: " + failed.get("error", "")}
        tol = max(TOLERANCE[case["dtype"]], 2 * ref_rms)
    return {"status": "pass" if rms <= tol else "FAIL", "rel_rms": rms, "tolerance": tol,
            "ref_rel_rms": ref_rms}


def run_case(conflux, case, zoo, extra, timeout, deadline, commit, resume):
    folder = os.path.join(zoo, case["case"])
    if "error" in case:
        return {"case": case["case"], "status": "export error", "error": case["error"]}
    saved = os.path.join(folder, "result.json")
    if resume and os.path.exists(saved):
        with open(saved) as f:
            old = json.load(f)
        if old.get("commit") == commit and old["status"] == "pass":
            return old
    if time.monotonic() > deadline:
        return {"case": case["case"], "status": "not run", "error": "out of time in this call"}
    r = check_case(conflux, case, folder, extra, timeout)
    r["commit"] = commit
    with open(saved, "w") as f:
        json.dump(r, f, indent=1)
    return r


def check_case(conflux, case, folder, extra, timeout):
    v = run_verify(conflux, case, folder, extra, timeout)
    rows = v.get("rows", [])
    precision = case["dtype"] if case["dtype"] == "f16" else \
        ("tf32" if any(r["precision"] == "tf32" for r in rows) else "f32")
    o = run_against_ort(conflux, case, folder, extra, timeout)
    ok = v["status"] == "pass" and o["status"] == "pass"
    return {"case": case["case"], "verify": v, "ort": o, "precision": precision,
            "status": "pass" if ok else "FAIL"}


def fmt_rms(check):
    if "rel_rms" in check:
        return f"{check['rel_rms']:.2e}"
    rows = check.get("rows", [])
    if not rows:
        return "-"
    worst = max(rows, key=lambda r: r["rel_rms"] / r["tolerance"])
    noise = f" (noise {worst['noise']:.1e})" if worst["noise"] > 0 else ""
    return f"{worst['rel_rms']:.2e}{noise}"


def table(cases, results):
    """One row per model: import and verify per variant, as bench/ZOO.md shows it."""
    by_case = {r["case"]: r for r in results}
    models = []
    for c in cases:
        if c["model"] not in models:
            models.append(c["model"])
    lines = ["| model | family | nodes | opset | dynamo f32 | script f32 | dynamo dyn | "
             "script dyn | dynamo f16 | rel RMS f32: verify (noise) / ort exact | "
             "rel RMS f16 vs f32 ort (ref's own) | "
             "first error |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for model in models:
        mine = {c["variant"]: c for c in cases if c["model"] == model}
        base = mine.get("dynamo") or {}
        cells, error = [], ""
        for variant in ("dynamo", "script", "dynamo_dyn", "script_dyn", "dynamo_f16"):
            c = mine.get(variant)
            r = by_case.get(c["case"]) if c else None
            if r is None:
                cells.append("-")
            elif r["status"] == "export error":
                cells.append("export error")
                error = error or f"{variant}: {r['error']}"
            else:
                detail = f" (verify {r['verify']['status']}, ort {r['ort']['status']})" \
                    if "verify" in r else ""
                cells.append("pass" if r["status"] == "pass" else f"**{r['status']}**{detail}")
                if r["status"] != "pass" and not error:
                    error = f"{variant}: " + (r.get("error") or r.get("verify", {}).get("error")
                                              or r.get("ort", {}).get("error") or "")
        f32 = by_case.get(f"{model}_dynamo") or by_case.get(f"{model}_script")
        f16 = by_case.get(f"{model}_dynamo_f16")
        rms32 = f"{f32['precision']}: {fmt_rms(f32['verify'])} / exact {fmt_rms(f32['ort'])}" \
            if f32 and "verify" in f32 else "-"
        rms16 = "-"
        if f16 and "rel_rms" in f16.get("ort", {}):
            own = f16["ort"].get("ref_rel_rms")
            rms16 = f"{f16['ort']['rel_rms']:.2e}" + (f" (ref {own:.1e})" if own else "")
        lines.append(f"| {model} | {base.get('family', '')} | {base.get('nodes', '')} | "
                     f"{base.get('opset', '')} | " + " | ".join(cells) +
                     f" | {rms32} | {rms16} | {error.replace('|', '/')} |")
    return "\n".join(lines)


def main():
    argv = sys.argv[1:]
    extra = []
    if "--" in argv:
        extra = argv[argv.index("--") + 1:]
        argv = argv[:argv.index("--")]
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("zoo")
    parser.add_argument("--conflux", default="build/bin/conflux")
    # Few at a time: each conflux process compiles its kernels on every core.
    parser.add_argument("--jobs", type=int, default=6)
    parser.add_argument("--timeout", type=int, default=300)
    parser.add_argument("--markdown")
    parser.add_argument("--json")
    parser.add_argument("--only", default="")
    parser.add_argument("--table-from", metavar="JSON",
                        help="print the table of an earlier run's --json record and stop")
    parser.add_argument("--deadline", type=float, default=1e9,
                        help="start no case after this many seconds (the rest: 'not run')")
    parser.add_argument("--resume", action="store_true",
                        help="keep the results of cases that passed with this same binary")
    args = parser.parse_args(argv)
    if args.table_from:
        with open(args.table_from) as f:
            record = json.load(f)
        print(table(record["cases"], record["results"]))
        return 0
    commit_file = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(args.conflux))),
                               "COMMIT")
    commit = open(commit_file).read().strip() if os.path.exists(commit_file) else ""
    cases = []
    for path in sorted(glob.glob(os.path.join(args.zoo, "*", "case.json"))):
        with open(path) as f:
            cases.append(json.load(f))
    if args.only:
        cases = [c for c in cases if c["model"] in args.only.split(",")]
    start = time.monotonic()
    results = []
    # Longest first (by node count) so that the slowest reference runs do not come last.
    order = sorted(cases, key=lambda c: -c.get("nodes", 0))
    with futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        deadline = start + args.deadline
        jobs = [pool.submit(run_case, args.conflux, c, args.zoo, extra, args.timeout, deadline,
                            commit, args.resume)
                for c in order]
        for job in futures.as_completed(jobs):
            r = job.result()
            results.append(r)
            why = r.get("error") or (r.get("verify", {}).get("error") or
                                     r.get("ort", {}).get("error") or "")
            print(f"[{len(results)}/{len(cases)} {time.monotonic() - start:.0f} s] "
                  f"{r['case']}: {r['status']} {why}", flush=True)
    text = table(cases, results)
    passed = sum(r["status"] == "pass" for r in results)
    exported = sum(r["status"] != "export error" for r in results)
    not_run = sum(r["status"] == "not run" for r in results)
    summary = f"{passed} of {exported} exported cases pass ({len(cases)} cases, " \
              f"{len({c['model'] for c in cases})} models" + \
              (f"; {not_run} not run in this call)" if not_run else ")")
    print(text)
    print(summary)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text + "\n\n" + summary + "\n")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"cases": cases, "results": results}, f, indent=1)
    return 0 if passed == exported else 1


if __name__ == "__main__":
    sys.exit(main())
