#!/usr/bin/env python3
"""Speed of the model zoo on the GPU: Conflux against PyTorch eager and
torch.compile(mode="reduce-overhead") (Inductor + CUDA graphs), per model and batch size, in f16,
in one process tree on one GPU, every Conflux output checked against PyTorch's.

Per model (the zoo's builders, bench/zoo/make_zoo.py: random weights from a fixed seed):
  prepare  (a worker process per model, --jobs preparing at a time; nothing here is timed)
           export once with a symbolic batch (TorchScript exporter, the dynamo exporter where
           TorchScript cannot), then per batch size: the input, PyTorch's f32 output (TF32 off:
           the answer) and f16 output, and torch.compile(mode="reduce-overhead") with static
           shapes, compiled and run; the worker keeps the f16 model and the compiled functions
           and waits, idle, for its model's turn below
  time     (one model at a time, every other worker idle) per batch size:
           conflux perf --fp16 (the program's median over -n runs, one CUDA graph per run, and
           its slowest launches) on the saved input, writing the outputs of one more run
           (--output-dir) for the check; PyTorch f16 eager (channels-last for images,
           cuDNN benchmark) and reduce-overhead, each timed as ITER back-to-back calls between
           two CUDA events, median of REPEATS such windows, in the model's worker (a child
           process that builds and compiles the model again if the worker failed)
  check    Conflux's output against PyTorch's f32 output: relative RMS within max(1e-2, twice
           PyTorch's own f16 distance from it), the rule bench/zoo/run_zoo.py uses

Results: one JSON record (--json) whose "figures" bench/compare reads (model, batch, variant =
conflux / torch_eager / torch_reduce_overhead, ms) and whose "rows" hold the rest, and a markdown
table (--markdown) with the ratios, their geometric means and each model's three slowest
launches. --resume FILE keeps the rows of an earlier call measured with the same conflux binary,
so the zoo can be timed over several device calls (bench/zoo/bench_zoo.sh).

Usage: python3 bench/zoo/bench_zoo.py WORK --conflux BIN [--only a,b] [--batches 1,32]
           [--tune quick|none] [--problem-cache F] [--jobs N] [--deadline S] [--resume JSON]
           [--wait-for FILE] [--json F] [--markdown F] [--table-from JSON]
"""
import argparse
import multiprocessing.connection as mp_connection
import importlib.util
import json
import math
import os
import re
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

# The zoo's vision and transformer models that the speed table covers (the segmentation models
# and the exporter variants are correctness cases: bench/zoo/run_zoo.py).
DEFAULT_MODELS = [
    "resnet50", "mobilenet_v2", "mobilenet_v3_small", "mobilenet_v3_large", "efficientnet_b0",
    "convnext_tiny", "densenet121", "regnet_y_400mf", "shufflenet_v2_x1_0", "vit_b_16", "swin_t",
    "timm_deit_small", "timm_mobilevit_xs", "hf_bert", "hf_gpt2_lm", "hf_vit",
    "hf_whisper_encoder", "hf_llama",
]
VARIANTS = ("conflux", "torch_eager", "torch_reduce_overhead")


def zoo_models():
    """bench/zoo/make_zoo.py as a module (it shares its name with tests/zoo/make_zoo.py, which
    it imports itself)."""
    spec = importlib.util.spec_from_file_location("zoo_models", os.path.join(HERE, "make_zoo.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build(name):
    import torch
    zm = zoo_models()
    from make_zoo import calibrate_batch_norms, randomise  # tests/zoo, put on sys.path by zm
    family, builder, make_input, axes = zm.all_models()[name]
    rng = np.random.default_rng(zm.SEED)
    torch.manual_seed(zm.SEED)
    model = builder().eval()
    randomise(model, rng)
    calibrate_batch_norms(model, make_input(1), batches=2, batch_size=4)
    return zm, family, model, make_input, axes


def batch_input(make_input, batch):
    """The batch's inputs, float ones already rounded to f16 so that every runner sees the same
    numbers."""
    import torch
    torch.manual_seed(1000 + batch)
    return tuple(x.half().float() if x.is_floating_point() else x for x in make_input(batch))


def on_gpu(xs, half):
    import torch
    out = []
    for x in xs:
        x = x.cuda()
        if x.is_floating_point() and half:
            x = x.half()
        if x.dim() == 4:
            x = x.contiguous(memory_format=torch.channels_last)
        out.append(x)
    return tuple(out)


def gpu_model(model, half):
    import copy
    import torch
    m = copy.deepcopy(model).cuda()
    if half:
        m = m.half()
    return m.to(memory_format=torch.channels_last)


def first_tensor(y):
    if isinstance(y, (tuple, list)):
        return first_tensor(y[0])
    if isinstance(y, dict):
        return first_tensor(next(iter(y.values())))
    return y


def relative_rms(got, want):
    got, want = got.astype(np.float64), want.astype(np.float64)
    norm = math.sqrt(float(np.mean(want * want)))
    rms = math.sqrt(float(np.mean((got - want) ** 2)))
    return rms / norm if norm > 0 else rms


# ---- prepare (a worker process per model) -------------------------------------------------------

def prepare(name, work, batches, kept=None):
    """`kept` (a dict): the f16 model and a reduce-overhead function per batch size are left in
    it, compiled with static shapes and cuDNN's benchmark mode as the timing uses them."""
    import torch
    torch.set_num_threads(2)
    if kept is not None:
        torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    folder = os.path.join(work, name)
    os.makedirs(folder, exist_ok=True)
    record = {"model": name, "batches": {}}
    start = time.monotonic()
    zm, family, model, make_input, axes = build(name)
    record["family"] = family
    path = os.path.join(folder, "model.onnx")
    example = make_input(2)
    errors = []
    for variant in ("script_dyn", "dynamo_dyn"):
        try:
            zm.export(model, example, path, variant, axes)
            record["export"] = variant
            break
        except Exception as e:  # TorchScript cannot export some models: the dynamo exporter can
            errors.append(f"{variant}: {type(e).__name__}: {zm.one_line(e)}")
    if "export" not in record:
        record["error"] = "; ".join(errors)
        return record
    import onnx
    graph = onnx.load(path, load_external_data=False).graph
    initializers = {i.name for i in graph.initializer}
    names = [i.name for i in graph.input if i.name not in initializers]
    record["export_s"] = round(time.monotonic() - start, 1)
    m32, m16 = gpu_model(model, False), gpu_model(model, True)
    for batch in batches:
        inputs = batch_input(make_input, batch)
        files = []
        for n, x in zip(names, inputs):
            f = os.path.join(folder, f"input_{batch}_{len(files)}.npy")
            np.save(f, x.numpy())
            files.append({"name": n, "file": f, "shape": list(x.shape)})
        with torch.no_grad():
            out32 = first_tensor(m32(*on_gpu(inputs, False))).float().cpu().numpy()
            out16 = first_tensor(m16(*on_gpu(inputs, True))).float().cpu().numpy()
            np.save(os.path.join(folder, f"torch_f32_{batch}.npy"), out32)
            compiled = torch.compile(m16, mode="reduce-overhead",
                                     dynamic=False if kept is not None else None)
            x16 = on_gpu(inputs, True)
            t = time.monotonic()
            for _ in range(3):
                got = first_tensor(compiled(*x16))
            torch.cuda.synchronize()
            compiled_out = got.float().cpu().numpy()
        record["batches"][str(batch)] = {
            "inputs": files, "output_shape": list(out32.shape),
            "torch_f16_rel_rms": relative_rms(out16, out32),
            "torch_compiled_rel_rms": relative_rms(compiled_out, out32),
            "torch_compile_s": round(time.monotonic() - t, 1)}
        if kept is not None:
            kept.setdefault("compiled", {})[str(batch)] = compiled
        else:
            del compiled
            torch._dynamo.reset()
    if kept is not None:
        kept["m16"] = m16
    del m32
    torch.cuda.empty_cache()
    record["prepare_s"] = round(time.monotonic() - start, 1)
    return record


# ---- time (one model at a time) -----------------------------------------------------------------

def measure(fn, iters, repeats):
    """Median over `repeats` windows of `iters` back-to-back calls between two CUDA events, after
    5 warm-up calls, in ms per call."""
    import torch
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    windows = []
    for _ in range(repeats):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(iters):
            fn()
        e.record()
        e.synchronize()
        windows.append(s.elapsed_time(e) / iters)
    return sorted(windows)[len(windows) // 2]


def time_torch(name, inputs_by_batch, iters, repeats, kept=None):
    """Eager and reduce-overhead at every batch size, {batch: {...}}: in the model's worker with
    the f16 model and the reduce-overhead functions it compiled while preparing (`kept`), or, as
    a fallback, in a child process of its own that builds and compiles them again."""
    import torch
    torch.backends.cudnn.benchmark = True
    if kept is None:
        _, _, model, _, _ = build(name)
        m16 = gpu_model(model, True)
    else:
        m16 = kept["m16"]
    results = {}
    for batch, inputs in inputs_by_batch.items():
        x16 = on_gpu(tuple(torch.from_numpy(np.load(i["file"])) for i in inputs), True)
        with torch.no_grad():
            eager = measure(lambda: m16(*x16), iters, repeats)
            t = time.monotonic()
            if kept is None:
                compiled = torch.compile(m16, mode="reduce-overhead")
            else:
                compiled = kept["compiled"][str(batch)]
            compiled(*x16)
            torch.cuda.synchronize()
            compile_s = time.monotonic() - t
            reduce_overhead = measure(lambda: compiled(*x16), iters, repeats)
        results[batch] = {"torch_eager": eager, "torch_reduce_overhead": reduce_overhead,
                          "torch_compile_s": round(compile_s, 1)}
        if kept is None:
            del compiled
            torch._dynamo.reset()
    return results


def model_worker(name, work, batches, iters, repeats, conn):
    """A model's own process for the whole call: prepares it and sends the record, then, when
    asked ("time", {batch: inputs}) while nothing else runs, times PyTorch with the models it
    kept, so reduce-overhead is not compiled a second time (about 35 s a batch size saved).
    Anything else ends it."""
    kept = {}
    try:
        record = prepare(name, work, batches, kept)
    except Exception as e:
        record = {"model": name, "error": f"prepare: {type(e).__name__}: "
                                          f"{zoo_models().one_line(e)}"}
    conn.send(record)
    while True:
        try:
            message = conn.recv()
        except EOFError:
            return
        if message[0] != "time" or "error" in record:
            return
        try:
            conn.send({"result": time_torch(name, message[1], iters, repeats, kept)})
        except Exception as e:
            conn.send({"error": f"{type(e).__name__}: {zoo_models().one_line(e)}"})


def time_in_worker(worker, inputs, timeout):
    """{"result": ...} from the model's worker, or {"error": why}; the worker ends either way
    (its GPU memory is freed before the next model is timed)."""
    if worker is None:
        return {"error": "no worker"}
    process, conn = worker
    try:
        conn.send(("time", inputs))
        if not conn.poll(timeout):
            return {"error": f"over {timeout} s"}
        return conn.recv()
    except (EOFError, OSError) as e:
        return {"error": f"the worker died ({type(e).__name__})"}
    finally:
        try:
            conn.send(("exit",))
        except (OSError, ValueError):
            pass
        process.join(30)
        if process.is_alive():
            process.kill()


def time_in_child(args, name, inputs, result):
    """The fallback of time_in_worker: a child process of its own builds and compiles the model
    again and writes `result`; {"result": ...} or {"error": why}."""
    try:
        child = subprocess.run([sys.executable, os.path.abspath(__file__), args.work,
                                "--iters", str(args.iters), "--repeats", str(args.repeats),
                                "--torch-child", name, json.dumps(inputs), result],
                               capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"over {args.timeout} s"}
    if child.returncode != 0:
        return {"error": last_line(child.stderr)}
    with open(result) as f:
        return {"result": json.load(f)}


LAUNCH_ROW = re.compile(r"^\s*([\d.]+)%\s+([\d.]+)\s+(\S+)\s+(.*?)\s{2,}(\S.*)$")


def conflux_args(inputs, tune, caches, narrow_outputs=False):
    # --narrow-outputs: f16 outputs, as the PyTorch model (made .half()) gives them; without it
    # Conflux writes the f32 outputs the exported graph declares (an LM's logits: twice the
    # bytes PyTorch writes).
    args = ["--fp16", "--tune", tune, "--quiet"] + (["--narrow-outputs"] if narrow_outputs else [])
    args += caches
    for i in inputs:
        args += ["--input", f"{i['name']}={i['file']}",
                 "--input-dim", f"{i['name']}:{','.join(str(d) for d in i['shape'])}"]
    return args


def time_conflux(conflux, folder, batch, info, tune, caches, iters, timeout, top,
                 narrow_outputs=False, tag=""):
    """tag: a prefix for the log and output folder, so a second binary (--also) keeps its own."""
    model = os.path.join(folder, "model.onnx")
    args = conflux_args(info["inputs"], tune, caches, narrow_outputs)
    out = {}
    t = time.monotonic()
    # perf writes the outputs of one more run after the timing: the check needs no second
    # compile in `conflux run`.
    got_dir = os.path.join(folder, f"conflux_out_{tag}{batch}")
    # --trace-compile: each tuned op's winner against the heuristic's first choice goes into
    # the log and the record (the data the --tune none heuristic is fitted on).
    p = subprocess.run([conflux, "perf", model, "-n", str(iters), "-t", str(top),
                        "--output-dir", got_dir, "--trace-compile"] + args,
                       capture_output=True, text=True, timeout=timeout)
    out["conflux_perf_s"] = round(time.monotonic() - t, 1)
    with open(os.path.join(folder, f"perf_{tag}{batch}.log"), "w") as f:
        f.write(p.stdout + p.stderr)
    if p.returncode != 0:
        return {**out, "error": "conflux perf: " + last_line(p.stderr + p.stdout)}
    m = re.search(r"^latency: median ([\d.]+) ms", p.stdout, re.M)
    out["conflux"] = float(m[1])
    m = re.search(r"(\d+) kernels, (\d+) launches", p.stdout)
    if m:
        out["kernels"], out["launches"] = int(m[1]), int(m[2])
    out["slowest"] = []
    table = p.stdout.split(" share ", 1)[-1].splitlines()[1:]
    for line in table:
        r = LAUNCH_ROW.match(line)
        if r:
            out["slowest"].append({"share": float(r[1]), "ms": float(r[2]), "kind": r[3],
                                   "gemm": r[4].strip(), "instruction": r[5].strip()})
    out["tuning"] = [
        {"origin": t[0], "configs": int(t[1]), "tuned": t[2], "tuned_ms": float(t[3]),
         "heuristic": t[4], "heuristic_ms": float(t[5])}
        for t in re.findall(r"^trace: (.*?): tuned (\d+) configs: (\S+) ([\d.]+) ms "
                            r"\(heuristic's first (\S+) ([\d.]+) ms\)", p.stdout, re.M)]
    written = re.findall(r"^wrote (.*\.npy)", p.stdout, re.M)
    got = np.load(written[0])
    want = np.load(os.path.join(folder, f"torch_f32_{batch}.npy"))
    if got.shape != want.shape:
        return {**out, "error": f"output shape {list(got.shape)}, PyTorch {list(want.shape)}"}
    if not np.all(np.isfinite(got)):
        return {**out, "error": "output has NaN/Inf"}
    out["rel_rms"] = relative_rms(got, want)
    out["tolerance"] = max(1e-2, 2 * info["torch_f16_rel_rms"])
    out["check"] = "pass" if out["rel_rms"] <= out["tolerance"] else "FAIL"
    return out


def last_line(text):
    lines = [l for l in text.splitlines() if l.strip()]
    return lines[-1].strip()[:300] if lines else ""


# ---- report -------------------------------------------------------------------------------------

def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def table(rows):
    lines = ["| model | batch | Conflux ms | eager ms | reduce-overhead ms | "
             "r-o / Conflux | eager / Conflux | check (rel RMS vs f32; tol) | launches | "
             "three slowest launches (ms, kind, config) |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    ratios = {}
    for r in sorted(rows, key=lambda r: (r["model"], r["batch"])):
        if "conflux" not in r or "torch_reduce_overhead" not in r:
            lines.append(f"| {r['model']} | {r['batch']} | - | - | - | - | - | "
                         f"{r.get('error', 'not measured').replace('|', '/')} | - | - |")
            continue
        ro = r["torch_reduce_overhead"] / r["conflux"]
        ratios.setdefault(r["batch"], []).append((ro, r["model"]))
        slow = "; ".join(f"{s['ms']:.3f} {s['kind']} {s['gemm']}" for s in r["slowest"][:3])
        check = f"{r['check']} ({r['rel_rms']:.1e}; {r['tolerance']:.1e})" if "check" in r \
            else r.get("error", "-")
        lines.append(f"| {r['model']} | {r['batch']} | {r['conflux']:.3f} | "
                     f"{r['torch_eager']:.3f} | {r['torch_reduce_overhead']:.3f} | {ro:.2f}x | "
                     f"{r['torch_eager'] / r['conflux']:.2f}x | {check} | "
                     f"{r.get('launches', '-')} | {slow} |")
    summary = []
    for batch, rs in sorted(ratios.items()):
        worst = min(rs)
        summary.append(f"batch {batch}: {len(rs)} models, geometric mean of reduce-overhead / "
                       f"Conflux {geomean([x for x, _ in rs]):.2f}x, lowest {worst[0]:.2f}x "
                       f"({worst[1]}), {sum(x >= 1 for x, _ in rs)} at or above 1.0x")
    ab = [r for r in rows if "conflux" in r and "conflux_also" in r]
    if ab:
        summary.append("--also: " + "; ".join(
            f"{r['model']} b{r['batch']} {r['conflux']:.3f} -> {r['conflux_also']:.3f} ms "
            f"({r.get('check_also', r.get('error_also', '-'))})"
            for r in sorted(ab, key=lambda r: (r["model"], r["batch"]))))
    return "\n".join(lines), summary


def figures(rows):
    return [{"model": r["model"], "batch": r["batch"], "variant": v, "ms": r[v]}
            for r in rows for v in VARIANTS if v in r]


def write_record(args, rows, commit, device):
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"commit": commit, "device": device, "tune": args.tune,
                       "narrow_outputs": args.narrow_outputs,
                       "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                       "figures": figures(rows), "rows": rows}, f, indent=1)
    text, summary = table(rows)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text + "\n\n" + "\n".join(summary) + "\n")
    return text, summary


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("work")
    ap.add_argument("--conflux", default="build/bin/conflux")
    ap.add_argument("--only", default="")
    ap.add_argument("--batches", default="1,32")
    ap.add_argument("--tune", default="quick", choices=["none", "quick", "exhaustive"])
    ap.add_argument("--problem-cache", default="")
    ap.add_argument("--jobs", type=int, default=4)
    ap.add_argument("--iters", type=int, default=20, help="calls per timing window (PyTorch)")
    ap.add_argument("--repeats", type=int, default=7, help="timing windows (PyTorch)")
    ap.add_argument("--runs", type=int, default=50, help="conflux perf -n")
    ap.add_argument("--deadline", type=float, default=1e9,
                    help="start no model's timing after this many seconds")
    ap.add_argument("--prepare-share", type=float, default=0.5,
                    help="the share of --deadline that preparing (export, Inductor) may take")
    ap.add_argument("--timeout", type=int, default=400)
    ap.add_argument("--top", type=int, default=3, help="launches listed in each perf log")
    ap.add_argument("--narrow-outputs", action="store_true",
                    help="conflux --narrow-outputs: f16 outputs as PyTorch's f16 model gives them")
    ap.add_argument("--resume", default="", help="JSON of an earlier call: its rows measured "
                                                  "with this binary are kept, not re-measured")
    ap.add_argument("--wait-for", metavar="FILE", default="",
                    help="start timing only once FILE exists (other GPU work of the same device "
                         "call, such as the GPU suite, runs while the models are prepared)")
    ap.add_argument("--also", metavar="BIN", default="",
                    help="a second conflux binary timed and checked right after the first on "
                         "the same exports and inputs, with a problem cache of its own (an A/B "
                         "in one call); its rows get conflux_also, check_also")
    ap.add_argument("--json")
    ap.add_argument("--markdown")
    ap.add_argument("--table-from", metavar="JSON")
    ap.add_argument("--torch-child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.torch_child:  # name, {batch: inputs} JSON, output file
        name, inputs, result = args.torch_child
        r = time_torch(name, json.loads(inputs), args.iters, args.repeats)
        with open(result, "w") as f:
            json.dump(r, f)
        return 0
    if args.table_from:
        rows = json.load(open(args.table_from))["rows"]
        text, summary = table(rows)
        print(text + "\n\n" + "\n".join(summary))
        return 0

    start = time.monotonic()
    commit_file = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(args.conflux))),
                               "COMMIT")
    commit = open(commit_file).read().strip() if os.path.exists(commit_file) else ""
    device = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                            capture_output=True, text=True).stdout.strip()
    batches = [int(b) for b in args.batches.split(",")]
    models = args.only.split(",") if args.only else DEFAULT_MODELS
    rows = []
    if args.resume and os.path.exists(args.resume):
        old = json.load(open(args.resume))
        if (old.get("commit") == commit and old.get("tune") == args.tune and
                old.get("narrow_outputs", False) == args.narrow_outputs):
            rows = [r for r in old["rows"] if "conflux" in r and r.get("check") == "pass"]
    done = {(r["model"], r["batch"]) for r in rows}
    todo = [m for m in models if any((m, b) not in done for b in batches)]
    print(f"{len(todo)} models to time ({len(models) - len(todo)} kept from {args.resume})",
          flush=True)
    os.makedirs(args.work, exist_ok=True)
    caches = ["--kernel-cache", os.path.join(args.work, "kernels")]
    if args.problem_cache:
        caches += ["--problem-cache", args.problem_cache]

    prepared, workers = {}, {}
    # spawn, not fork: every worker starts its own CUDA context. At most --jobs prepare at once;
    # a prepared worker waits (idle, its models on the GPU) until its model is timed.
    mp = __import__("multiprocessing").get_context("spawn")
    waiting, preparing = list(todo), {}
    prepare_deadline = start + args.prepare_share * args.deadline
    while waiting or preparing:
        while waiting and len(preparing) < args.jobs:
            name = waiting.pop(0)
            here, there = mp.Pipe()
            process = mp.Process(target=model_worker, daemon=True,
                                 args=(name, args.work, batches, args.iters, args.repeats, there))
            process.start()
            there.close()
            preparing[here] = name
            workers[name] = (process, here)
        ready = mp_connection.wait(list(preparing),
                                   timeout=max(0, prepare_deadline - time.monotonic()))
        for conn in ready:
            name = preparing.pop(conn)
            try:
                prepared[name] = conn.recv()
            except EOFError:
                prepared[name] = {"model": name, "error": "prepare: the worker died"}
            p = prepared[name]
            print(f"[prepare {time.monotonic() - start:.0f} s] {name}: "
                  f"{p.get('error') or p.get('export')} ({p.get('prepare_s', '-')} s)",
                  flush=True)
        if (waiting or preparing) and time.monotonic() >= prepare_deadline:
            # The rest waits for the next call (--resume keeps what this one measures).
            left = sorted(waiting + list(preparing.values()))
            print(f"prepare: out of time, {len(left)} models left for the next call: "
                  f"{', '.join(left)}", flush=True)
            for name in preparing.values():
                workers.pop(name)[0].kill()
            break
    todo = [m for m in todo if m in prepared]
    if args.wait_for and not os.path.exists(args.wait_for):
        print(f"[time {time.monotonic() - start:.0f} s] waiting for {args.wait_for}", flush=True)
        while not os.path.exists(args.wait_for):
            time.sleep(1)
        print(f"[time {time.monotonic() - start:.0f} s] timing starts", flush=True)

    for name in todo:
        p = prepared[name]
        mine = []
        for batch in batches:
            if (name, batch) in done:
                continue
            row = {"model": name, "batch": batch}
            rows.append(row)
            if "error" in p:
                row["error"] = p["error"]
                continue
            if time.monotonic() - start > args.deadline:
                row["error"] = "not measured: out of time in this call"
                continue
            info = p["batches"][str(batch)]
            row.update(export=p["export"], torch_f16_rel_rms=info["torch_f16_rel_rms"],
                       torch_compiled_rel_rms=info["torch_compiled_rel_rms"])
            try:
                row.update(time_conflux(args.conflux, os.path.join(args.work, name), batch, info,
                                        args.tune, caches, args.runs, args.timeout, args.top,
                                        args.narrow_outputs))
            except subprocess.TimeoutExpired:
                row["error"] = f"conflux: over {args.timeout} s"
            if args.also:
                also_caches = ["--kernel-cache", os.path.join(args.work, "kernels_also")]
                if args.problem_cache:
                    also_caches += ["--problem-cache", args.problem_cache + ".also"]
                try:
                    b = time_conflux(args.also, os.path.join(args.work, name), batch, info,
                                     args.tune, also_caches, args.runs, args.timeout, args.top,
                                     args.narrow_outputs, tag="also_")
                    row.update({k + "_also": b[k] for k in
                                ("conflux", "check", "rel_rms", "error", "slowest", "launches")
                                if k in b})
                except subprocess.TimeoutExpired:
                    row["error_also"] = f"conflux (--also): over {args.timeout} s"
                print(f"[time {time.monotonic() - start:.0f} s] {name} batch {batch}: conflux "
                      f"{row.get('conflux', '-')} ms, --also {row.get('conflux_also', '-')} ms "
                      f"(check {row.get('check_also', row.get('error_also', '-'))})", flush=True)
            mine.append(row)
        if not mine:
            continue
        # PyTorch for every batch size of the model: in its worker (compiled while preparing),
        # else in a child process of its own that compiles again.
        result = os.path.join(args.work, name, "torch.json")
        inputs = {str(r["batch"]): p["batches"][str(r["batch"])]["inputs"] for r in mine}
        timed = time_in_worker(workers.pop(name, None), inputs, args.timeout)
        if "result" in timed:
            with open(result, "w") as f:  # for the logs, as the child writes it
                json.dump(timed["result"], f)
        else:
            print(f"[time {time.monotonic() - start:.0f} s] {name}: PyTorch in its worker: "
                  f"{timed['error']}; timing it in a child process", flush=True)
            timed = time_in_child(args, name, inputs, result)
        for row in mine:
            if "error" in timed:
                row["torch_error"] = timed["error"]
            else:
                row.update(timed["result"][str(row["batch"])])
            ratio = row["torch_reduce_overhead"] / row["conflux"] \
                if "conflux" in row and "torch_reduce_overhead" in row else float("nan")
            print(f"[time {time.monotonic() - start:.0f} s] {name} batch {row['batch']}: conflux "
                  f"{row.get('conflux', '-')} ms, eager {row.get('torch_eager', '-'):.4}, "
                  f"reduce-overhead {row.get('torch_reduce_overhead', '-'):.4} "
                  f"({ratio:.2f}x), check {row.get('check', row.get('error', '-'))}",
                  flush=True)
        write_record(args, rows, commit, device)  # kept if the call runs out of time
    text, summary = write_record(args, rows, commit, device)
    print(text + "\n\n" + "\n".join(summary))
    failed = [r for r in rows if r.get("check") == "FAIL" or "error" in r]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
