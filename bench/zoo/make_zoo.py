#!/usr/bin/env python3
"""The full-size model zoo: real torchvision, timm and Hugging Face models at their published
sizes, random weights from a fixed seed (nothing is downloaded), exported by PyTorch's two
exporters, with onnxruntime's CPU outputs as the expected results. Run on the GPU machine
(bench/zoo/run_zoo.sh), where PyTorch is installed; bench/zoo/run_zoo.py then runs Conflux over
every case and writes the table for bench/ZOO.md.

Every model gives these cases, each a folder OUT/<model>_<variant>/ with model.onnx and case.json:
  dynamo      f32, torch.onnx's default exporter with its defaults (weights in model.onnx.data)
  script      f32, the TorchScript exporter (opset 17), weights inside model.onnx
  dynamo_dyn  f32, the default exporter with a symbolic batch dim (and sequence dim for text),
              run at batch 2
  script_dyn  the same with the TorchScript exporter's dynamic_axes
  dynamo_f16  the model in f16 (model.half()), default exporter
The f32 cases' expected outputs come from onnxruntime running that case's own model; the f16
case is judged against the f32 outputs of the same weights and inputs (the answer a user wants).
A case an exporter cannot produce records the exporter's error instead of a model.

Usage: python3 bench/zoo/make_zoo.py OUT [--jobs N] [--only NAME,...] [--skip-done]
"""
import argparse
import concurrent.futures as futures
import contextlib
import copy
import inspect
import io
import json
import os
import re
import shutil
import sys
import time
import traceback
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
# Packages this machine lacks, unpacked by run_zoo.sh: after its own, so they never shadow them.
if os.environ.get("ZOO_PYDEPS"):
    sys.path.append(os.environ["ZOO_PYDEPS"])
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "zoo"))

SEED = 20261202


# ---- the models: name -> (family, builder, example-input maker, symbolic axes per input) -------
# Symbolic axes: {input index: {axis: dim name}}.

def image_input(size=224):
    import torch
    return lambda batch: (torch.randn(batch, 3, size, size),)


def text_input(vocab, length=128, mask=True, offset=0):
    """Token ids (and an attention mask whose last eighth is padding, so masking is exercised)."""
    import torch

    def make(batch):
        ids = torch.randint(offset, vocab, (batch, length))
        if not mask:
            return (ids,)
        m = torch.ones(batch, length, dtype=torch.int64)
        m[:, length - length // 8:] = 0
        return (ids, m)
    return make


IMAGE_AXES = {0: {0: "batch"}}
TEXT_AXES = {0: {0: "batch", 1: "sequence"}, 1: {0: "batch", 1: "sequence"}}


class FirstOutput:
    """Wraps a model whose forward returns a dict or tuple (segmentation, Hugging Face) so that
    the exported graph has one output: the one users read."""

    def __new__(cls, inner, key=None):
        import torch

        class Wrapped(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.inner = inner

            def forward(self, *args):
                if key is not None:
                    return self.inner(*args)[key]
                return self.inner(*args, return_dict=False)[0]
        return Wrapped()


def torchvision_models():
    import torchvision.models as m
    import torchvision.models.segmentation as seg
    c = lambda build, size=224: ("torchvision", build, image_input(size), IMAGE_AXES)
    s = lambda build: ("torchvision", lambda: FirstOutput(build(), "out"), image_input(224),
                       IMAGE_AXES)
    return {
        "resnet50": c(lambda: m.resnet50()),
        "mobilenet_v2": c(lambda: m.mobilenet_v2()),
        "mobilenet_v3_small": c(lambda: m.mobilenet_v3_small()),
        "mobilenet_v3_large": c(lambda: m.mobilenet_v3_large()),
        "efficientnet_b0": c(lambda: m.efficientnet_b0()),
        "convnext_tiny": c(lambda: m.convnext_tiny()),
        "densenet121": c(lambda: m.densenet121()),
        "inception_v3": c(lambda: m.inception_v3(aux_logits=False, init_weights=True), 299),
        "googlenet": c(lambda: m.googlenet(aux_logits=False, init_weights=True)),
        "shufflenet_v2_x1_0": c(lambda: m.shufflenet_v2_x1_0()),
        "regnet_y_400mf": c(lambda: m.regnet_y_400mf()),
        "squeezenet1_1": c(lambda: m.squeezenet1_1()),
        "vgg11_bn": c(lambda: m.vgg11_bn()),
        "mnasnet1_0": c(lambda: m.mnasnet1_0()),
        "vit_b_16": c(lambda: m.vit_b_16()),
        "swin_t": c(lambda: m.swin_t()),
        "fcn_resnet50": s(lambda: seg.fcn_resnet50(weights_backbone=None, aux_loss=False)),
        "deeplabv3_mobilenet_v3_large": s(lambda: seg.deeplabv3_mobilenet_v3_large(
            weights_backbone=None, aux_loss=False)),
        "lraspp_mobilenet_v3_large": s(lambda: seg.lraspp_mobilenet_v3_large(
            weights_backbone=None)),
    }


def timm_models():
    import timm
    c = lambda name, size=224: ("timm", lambda: timm.create_model(name, pretrained=False),
                                image_input(size), IMAGE_AXES)
    return {
        "timm_deit_small": c("deit_small_patch16_224"),
        "timm_mixer_s16": c("mixer_s16_224"),
        "timm_mobilevit_xs": c("mobilevit_xs", 256),
        "timm_ghostnet_100": c("ghostnet_100"),
        "timm_poolformer_s12": c("poolformer_s12"),
    }


def huggingface_models():
    import torch
    import transformers as t
    hf = lambda build, inputs, axes: ("transformers", lambda: FirstOutput(build()), inputs, axes)
    whisper = t.WhisperConfig()  # whisper-tiny's sizes: 80 mel bins, 3000 frames, 1500 positions
    return {
        "hf_bert": hf(lambda: t.BertModel(t.BertConfig()), text_input(30522), TEXT_AXES),
        "hf_distilbert": hf(lambda: t.DistilBertModel(t.DistilBertConfig()), text_input(30522),
                            TEXT_AXES),
        "hf_roberta": hf(lambda: t.RobertaModel(t.RobertaConfig(vocab_size=50265)),
                         text_input(50265, offset=2), TEXT_AXES),
        "hf_gpt2_lm": hf(lambda: t.GPT2LMHeadModel(t.GPT2Config()),
                         text_input(50257, mask=False), {0: TEXT_AXES[0]}),
        # A Llama-style decoder (RMSNorm, rotary positions, grouped-query attention, SwiGLU)
        # at a size that exports in seconds; no KV cache.
        "hf_llama": hf(lambda: t.LlamaForCausalLM(t.LlamaConfig(
            vocab_size=32000, hidden_size=512, intermediate_size=1408, num_hidden_layers=8,
            num_attention_heads=8, num_key_value_heads=4, max_position_embeddings=1024,
            use_cache=False)), text_input(32000, mask=False), {0: TEXT_AXES[0]}),
        "hf_t5_encoder": hf(lambda: t.T5EncoderModel(t.T5Config()), text_input(32128),
                            TEXT_AXES),
        "hf_vit": hf(lambda: t.ViTModel(t.ViTConfig()), image_input(224), IMAGE_AXES),
        "hf_whisper_encoder": hf(lambda: t.WhisperModel(whisper).get_encoder(),
                                 lambda batch: (torch.randn(batch, whisper.num_mel_bins,
                                                            2 * whisper.max_source_positions),),
                                 IMAGE_AXES),
    }


def all_models():
    models = {}
    for family in (torchvision_models, timm_models, huggingface_models):
        models.update(family())
    return models


# ---- export -------------------------------------------------------------------------------------

VARIANTS = ("dynamo", "script", "dynamo_dyn", "script_dyn", "dynamo_f16")


def export(model, example, path, variant, axes):
    import torch
    dynamic = variant.endswith("_dyn")
    with torch.no_grad(), warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        if variant.startswith("dynamo"):
            shapes = None
            if dynamic:
                dims = {}
                shapes = tuple({axis: dims.setdefault(n, torch.export.Dim(n, min=1, max=4096))
                                for axis, n in axes.get(i, {}).items()} or None
                               for i in range(len(example)))
                # A forward(*args) wrapper takes one argument, the tuple of all inputs.
                params = inspect.signature(model.forward).parameters.values()
                if any(p.kind == p.VAR_POSITIONAL for p in params):
                    shapes = (shapes,)
            torch.onnx.export(model, example, path, dynamo=True, dynamic_shapes=shapes)
        else:
            names = [f"input_{i}" for i in range(len(example))]
            dynamic_axes = {names[i]: a for i, a in axes.items() if i < len(example)} \
                if dynamic else None
            torch.onnx.export(model, example, path, dynamo=False, opset_version=17,
                              input_names=names, dynamic_axes=dynamic_axes)


def ort_outputs(path, arrays):
    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 2
    sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    results = sess.run(None, dict(zip(names, arrays)))
    return names, [o.name for o in sess.get_outputs()], [np.asarray(r) for r in results]


def describe(path):
    import onnx
    m = onnx.load(path, load_external_data=False)
    opset = max(o.version for o in m.opset_import if o.domain in ("", "ai.onnx"))
    return {"nodes": len(m.graph.node), "opset": opset,
            "ops": sorted({n.op_type for n in m.graph.node}),
            "external_data": os.path.exists(path + ".data")}


def save_arrays(folder, prefix, arrays):
    files = []
    for i, a in enumerate(arrays):
        f = os.path.join(folder, f"{prefix}_{i}.npy")
        np.save(f, a)
        files.append(os.path.basename(f))
    return files


def build_cases(name, out, variants=VARIANTS):
    """Every variant of one model; returns one record per case. (Takes the model's name, not its
    builder: builders are closures, which do not cross into a worker process.)"""
    import torch
    from make_zoo import calibrate_batch_norms, randomise  # tests/zoo: the CI zoo's helpers
    torch.set_num_threads(2)
    family, build, make_input, axes = all_models()[name]
    rng = np.random.default_rng(SEED)
    torch.manual_seed(SEED)
    records = []
    try:
        model = build().eval()
        randomise(model, rng)
        calibrate_batch_norms(model, make_input(1), batches=2, batch_size=4)
    except Exception as e:
        return [{"model": name, "family": family, "case": f"{name}_{v}", "variant": v,
                 "error": f"building it failed: {type(e).__name__}: {one_line(e)}"}
                for v in VARIANTS]
    torch.manual_seed(SEED)
    example = make_input(1)
    example2 = make_input(2)
    f32_expected = None
    for variant in variants:
        case = f"{name}_{variant}"
        folder = os.path.join(out, case)
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        rec = {"model": name, "family": family, "case": case, "variant": variant,
               "exporter": variant.split("_")[0],
               "dtype": "f16" if variant.endswith("f16") else "f32",
               "dynamic": variant.endswith("_dyn")}
        inputs = example2 if rec["dynamic"] else example
        m = model
        if rec["dtype"] == "f16":
            m = copy.deepcopy(model).half()
            inputs = tuple(x.half() if x.is_floating_point() else x for x in inputs)
        path = os.path.join(folder, "model.onnx")
        start = time.monotonic()
        try:
            export(m, inputs, path, variant, axes)
            rec["export_s"] = round(time.monotonic() - start, 1)
            rec.update(describe(path))
            arrays = [x.numpy() for x in inputs]
            if rec["dtype"] == "f32":
                in_names, out_names, expected = ort_outputs(path, arrays)
                if not rec["dynamic"] and f32_expected is None:
                    f32_expected = expected
            else:
                import onnxruntime as ort
                sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
                in_names = [i.name for i in sess.get_inputs()]
                out_names = [o.name for o in sess.get_outputs()]
                if f32_expected is None:
                    raise RuntimeError("no f32 export to take the expected outputs from")
                expected = f32_expected
            rec["inputs"] = [{"name": n, "file": f, "shape": list(a.shape),
                              "dtype": str(a.dtype)}
                             for n, f, a in zip(in_names, save_arrays(folder, "input", arrays),
                                                arrays)]
            rec["outputs"] = [{"name": n, "file": f, "shape": list(a.shape)}
                              for n, f, a in zip(out_names,
                                                 save_arrays(folder, "expected", expected),
                                                 expected)]
        except Exception as e:  # an exporter's failure is recorded, not hidden
            rec["error"] = f"{type(e).__name__}: {one_line(e)}"
            rec["export_s"] = round(time.monotonic() - start, 1)
            with open(os.path.join(folder, "error.txt"), "w") as f:
                traceback.print_exc(file=f)
        with open(os.path.join(folder, "case.json"), "w") as f:
            json.dump(rec, f, indent=1)
        records.append(rec)
    return records


def one_line(e, limit=300):
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(e))
    # torch.export's errors open with advice; the cause follows the summary heading.
    if "## Exception summary" in text:
        text = text.split("## Exception summary", 1)[1]
    text = " ".join(text.split())
    return text[:limit]


def export_cost(name):
    """Transformers export slowest, then the big CNNs: they start first so none comes last."""
    return (name.startswith("hf_"), "vit" in name or "swin" in name or "deit" in name,
            name in ("inception_v3", "densenet121", "fcn_resnet50", "vgg11_bn", "resnet50"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out")
    parser.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 2) // 2))
    parser.add_argument("--only", default="")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--deadline", type=float, default=1e9,
                        help="stop after this many seconds, leaving unfinished models out")
    parser.add_argument("--skip-done", action="store_true",
                        help="leave out models whose every case was exported by an earlier run")
    args = parser.parse_args()
    models = all_models()
    if args.only:
        wanted = args.only.split(",")
        unknown = [w for w in wanted if w not in models]
        if unknown:
            sys.exit(f"make_zoo.py: no model named {', '.join(unknown)}")
        models = {k: v for k, v in models.items() if k in wanted}
    if args.skip_done:
        models = {k: v for k, v in models.items()
                  if not all(os.path.exists(os.path.join(args.out, f"{k}_{v}", "case.json"))
                             for v in args.variants.split(","))}
    os.makedirs(args.out, exist_ok=True)
    start = time.monotonic()
    records = []
    # Models are independent and each export is mostly single-threaded Python: one process each.
    pool = futures.ProcessPoolExecutor(max_workers=args.jobs)
    jobs = {pool.submit(build_cases, n, args.out, args.variants.split(",")): n
            for n in sorted(models, key=export_cost, reverse=True)}
    pending = set(jobs)
    while pending:
        done, pending = futures.wait(pending, timeout=max(0, start + args.deadline -
                                                          time.monotonic()),
                                     return_when=futures.FIRST_COMPLETED)
        for job in done:
            try:
                got = job.result()
            except Exception as e:  # a worker that died takes only its own model with it
                got = [{"model": jobs[job], "case": f"{jobs[job]}_{v}", "variant": v,
                        "error": f"worker failed: {type(e).__name__}: {one_line(e)}"}
                       for v in VARIANTS]
            records += got
            ok = sum("error" not in r for r in got)
            print(f"[{len(set(r['model'] for r in records))}/{len(models)}] {jobs[job]}: "
                  f"{ok}/{len(got)} cases exported ({time.monotonic() - start:.0f} s)",
                  flush=True)
        if pending and time.monotonic() >= start + args.deadline:
            # Out of time: the unfinished models are left for the next run (--skip-done).
            print(f"deadline: {len(pending)} models left: "
                  f"{', '.join(sorted(jobs[j] for j in pending))}", flush=True)
            for process in list(pool._processes.values()):
                process.kill()
            break
    pool.shutdown(wait=False, cancel_futures=True)
    print(f"{sum('error' not in r for r in records)} of {len(records)} cases exported",
          flush=True)


if __name__ == "__main__":
    main()
