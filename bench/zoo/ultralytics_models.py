#!/usr/bin/env python3
"""Ultralytics' detectors (YOLOv8/10/11 detect, segment, pose; RT-DETR) as a user exports them:
built from their yaml (random weights), the heads in export mode, exported with the TorchScript
exporter at 320x320, then `conflux run --target ref` against onnxruntime and
`conflux compile --target cuda` (NVRTC for sm_90, no GPU needed). Prints one line per model.

    python3 bench/zoo/ultralytics_models.py --conflux build/bin/conflux WORKDIR [NAME ...]

Needs torch, ultralytics, onnx and onnxruntime (pip). RT-DETR's 300 detections are ranked by
scores that random weights make nearly equal, so rows with scores a few 1e-6 apart may come out
in another order: the script also compares the rows sorted, which is what a user's NMS-free
consumer sees.
"""
import glob
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import unseen_models  # noqa: E402  (the same command line)

NAMES = ["yolov8n", "yolo11n", "yolov8n-seg", "yolov8n-pose", "yolov10n", "rtdetr-l"]


def rel_rms(got, want):
    return float(np.sqrt(np.mean((got - want) ** 2)) / (np.sqrt(np.mean(want ** 2)) + 1e-30))


def main():
    args = unseen_models.parse_args(__doc__)
    import onnxruntime as ort
    import torch
    from ultralytics.nn.tasks import DetectionModel, PoseModel, RTDETRDetectionModel, SegmentationModel
    conflux = os.path.abspath(args.conflux)
    for name in args.names or NAMES:
        cls = (RTDETRDetectionModel if name.startswith("rtdetr") else
               SegmentationModel if name.endswith("-seg") else
               PoseModel if name.endswith("-pose") else DetectionModel)
        base = os.path.join(args.work, name)
        try:
            model = cls(name + ".yaml", verbose=False).eval()
            for m in model.modules():
                if hasattr(m, "export"):
                    m.export = True
                if hasattr(m, "format"):
                    m.format = "onnx"
            x = torch.randn(1, 3, 320, 320)
            with torch.no_grad():
                model(x)
                torch.onnx.export(model, (x,), base + ".onnx", opset_version=17, dynamo=False,
                                  input_names=["images"])
        except Exception as e:  # the exporter's failure, not Conflux's
            print(f"{name}: export failed ({str(e).splitlines()[0][:200]})")
            continue
        np.save(base + "_x.npy", x.numpy())
        want = ort.InferenceSession(base + ".onnx", providers=["CPUExecutionProvider"]).run(
            None, {"images": x.numpy()})[0]
        r = subprocess.run([conflux, "run", "--target", "ref", base + ".onnx", "--input",
                            f"images={base}_x.npy", "--output-dir", base + "_out"],
                           capture_output=True, text=True)
        if r.returncode:
            print(f"{name}: run: {(r.stderr.strip().splitlines() or [''])[-1][:300]}")
            continue
        got = np.load(sorted(glob.glob(base + "_out/*.npy"))[0])
        line = f"{name}: reference vs onnxruntime rel RMS {rel_rms(got, want):.1e}"
        if got.ndim == 3 and got.shape[1] > got.shape[2]:  # RT-DETR: [1, detections, 4 + 2]
            order = lambda a: a[0][np.lexsort(a[0].T[::-1])]
            line += f", rows sorted {rel_rms(order(got), order(want)):.1e}"
        c = subprocess.run([conflux, "compile", "--target", "cuda", "--arch", "sm_90a",
                            base + ".onnx"], capture_output=True, text=True)
        line += "; cuda compile " + ("ok" if c.returncode == 0 else
                                     (c.stderr.strip().splitlines() or [""])[-1][:200])
        print(line, flush=True)


if __name__ == "__main__":
    main()
