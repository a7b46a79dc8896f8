"""conflux.compile / Program.run / save / load on the reference target and compile-only for
sm_90 (no GPU needed), checked against onnxruntime's outputs stored with the test models."""

import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import conflux
from conftest import EXAMPLE, has_gpu, model_dirs

onnx = pytest.importorskip("onnx")
from onnx import numpy_helper  # noqa: E402


def read_pb(path):
    t = onnx.TensorProto()
    t.ParseFromString(path.read_bytes())
    return numpy_helper.to_array(t)


def stored_data(model_dir):
    """The inputs and onnxruntime's outputs of the model's test_data_set_0, by name."""
    model = onnx.load(str(model_dir / "model.onnx"))
    data = model_dir / "test_data_set_0"
    init = {i.name for i in model.graph.initializer}
    inputs = [i.name for i in model.graph.input if i.name not in init]
    outputs = [o.name for o in model.graph.output]
    xs = {n: read_pb(data / f"input_{k}.pb") for k, n in enumerate(inputs)}
    ys = {n: read_pb(data / f"output_{k}.pb") for k, n in enumerate(outputs)}
    return xs, ys


@pytest.mark.parametrize("model_dir", model_dirs(), ids=lambda p: p.name)
def test_reference_target_matches_onnxruntime(model_dir):
    xs, ys = stored_data(model_dir)
    p = conflux.compile(model_dir / "model.onnx", target="ref")
    assert p.target == "ref" and p.arch is None
    assert [t.name for t in p.inputs] == list(xs)
    assert [t.name for t in p.outputs] == list(ys)
    got = p.run(xs)
    assert list(got) == list(ys)
    for name, want in ys.items():
        assert got[name].dtype == want.dtype and got[name].shape == want.shape, name
        tol = 1e-2 if want.dtype == np.float16 else 1e-4
        np.testing.assert_allclose(got[name].astype(np.float64), want.astype(np.float64),
                                   rtol=tol, atol=tol, err_msg=name)


def test_a_path_bytes_and_a_model_proto_compile_alike(example):
    x = {"x": np.random.default_rng(1).standard_normal((1, 3, 16, 16)).astype(np.float32)}
    by_path = conflux.compile(example, target="ref").run(x)
    by_bytes = conflux.compile(example.read_bytes(), target="ref").run(x)
    by_proto = conflux.compile(onnx.load(str(example)), target="ref").run(x)
    assert np.array_equal(by_path["y"], by_bytes["y"])
    assert np.array_equal(by_path["y"], by_proto["y"])


def test_tensor_info_describes_inputs_and_outputs(example):
    p = conflux.compile(example, target="ref")
    (x,), (y,) = p.inputs, p.outputs
    assert (x.name, x.dtype, x.shape) == ("x", "f32", (1, 3, 16, 16))
    assert (y.name, y.dtype, y.shape) == ("y", "f32", (1, 256, 8))
    assert "conflux.Program target='ref'" in repr(p)


def test_narrow_outputs_give_the_sixteen_bit_values(example):
    x = np.random.default_rng(3).standard_normal((1, 3, 16, 16)).astype(np.float32)
    wide = conflux.compile(example, target="ref", fp16=True)
    narrow = conflux.compile(example, target="ref", fp16=True, narrow_outputs=True)
    assert wide.outputs[0].dtype == "f32" and narrow.outputs[0].dtype == "f16"
    assert narrow.inputs[0].dtype == "f32"
    got, want = narrow.run({"x": x})["y"], wide.run({"x": x})["y"]
    assert got.dtype == np.float16
    # The f32 outputs are those 16-bit values converted back: equal, element by element.
    np.testing.assert_array_equal(got.astype(np.float32), want)
    with pytest.raises(conflux.UserError, match="narrow_outputs: the outputs are narrowed"):
        conflux.compile(example, target="ref", narrow_outputs=True)


@pytest.mark.skipif(has_gpu(), reason="checks the no-GPU fallback")
def test_auto_without_a_gpu_runs_on_the_reference_target_with_a_warning(example):
    with pytest.warns(UserWarning, match="no CUDA device"):
        p = conflux.compile(example)
    assert p.target == "ref"


def test_bad_inputs_name_the_input(example):
    p = conflux.compile(example, target="ref")
    good = np.zeros((1, 3, 16, 16), np.float32)
    with pytest.raises(conflux.UserError, match="input 'nope': the program has no such input; "
                                                "its inputs are: x"):
        p.run({"x": good, "nope": good})
    # As `conflux run`: an input not given is random (seed 0), with a warning saying so.
    with pytest.warns(UserWarning, match=r"input 'x' not given: using random f32\[1,3,16,16\]"):
        y = p.run({})["y"]
    assert y.shape == (1, 256, 8) and np.isfinite(y).all()
    with pytest.raises(TypeError, match="input 'x' is float64 but the program expects f32"):
        p.run({"x": good.astype(np.float64)})
    with pytest.raises(conflux.UserError, match=r"input 'x' has shape \[2,2\]"):
        p.run({"x": np.zeros((2, 2), np.float32)})
    with pytest.raises(TypeError, match="expected a dict"):
        p.run([good])
    # Any strides: a transposed view is taken as its values.
    t = np.ascontiguousarray(np.random.default_rng(2).standard_normal((16, 16, 3, 1))
                             .astype(np.float32)).transpose(3, 2, 1, 0)
    assert np.array_equal(p.run({"x": t})["y"], p.run({"x": np.ascontiguousarray(t)})["y"])


def test_bad_compiles_are_user_errors(tmp_path, example):
    with pytest.raises(conflux.UserError, match="missing.onnx"):
        conflux.compile(tmp_path / "missing.onnx")
    with pytest.raises(conflux.UserError):
        conflux.compile(b"not an onnx model")
    with pytest.raises(conflux.UserError, match="tune 'fast'"):
        conflux.compile(example, target="cuda", tune="fast")
    with pytest.raises(conflux.UserError, match="target 'tpu'"):
        conflux.compile(example, target="tpu")
    with pytest.raises(TypeError, match="expected a path, bytes or an onnx.ModelProto"):
        conflux.compile(42)


def test_a_saved_program_loads_as_it_was_compiled(tmp_path, example):
    p = conflux.compile(example, target="cuda", arch="sm_90", tune="none")
    assert p.target == "cuda" and p.arch == "sm_90"
    p.save(tmp_path / "m.cfx")
    q = conflux.load(tmp_path / "m.cfx")
    assert (q.target, q.arch) == ("cuda", "sm_90")
    assert [(t.name, t.dtype, t.shape) for t in q.inputs] == \
        [(t.name, t.dtype, t.shape) for t in p.inputs]
    assert [(t.name, t.dtype, t.shape) for t in q.outputs] == \
        [(t.name, t.dtype, t.shape) for t in p.outputs]
    # Saved again, a loaded program is the same file (the model it names included) but for the
    # time it was written and the digest.
    q.save(tmp_path / "again.cfx")
    first, again = (tmp_path / "m.cfx").read_bytes(), (tmp_path / "again.cfx").read_bytes()
    assert len(first) == len(again)
    assert sum(a != b for a, b in zip(first, again)) <= 16 + 20
    assert b'"model": "conv_block.onnx"' in again[:4096]


def test_every_bad_file_is_one_user_error(tmp_path, example):
    p = conflux.compile(example, target="cuda", arch="sm_90", tune="none")
    good = tmp_path / "good.cfx"
    p.save(good)
    data = good.read_bytes()

    def write(name, content):
        path = tmp_path / name
        path.write_bytes(content)
        return path

    flipped = bytearray(data)
    flipped[len(data) // 2] ^= 0x01
    newer = bytearray(data)
    newer[8] += 1
    cases = {
        write("cut.cfx", data[: len(data) // 2]): "truncated",
        write("flip.cfx", bytes(flipped)): "corrupted",
        write("newer.cfx", bytes(newer)): "newer than this Conflux reads",
        example: "not a Conflux program file",
        write("empty.cfx", b""): "not a Conflux program file",
        tmp_path / "missing.cfx": "cannot open it",
    }
    for path, reason in cases.items():
        with pytest.raises(conflux.UserError, match=reason) as e:
            conflux.load(path)
        assert str(path) in str(e.value)
        assert "\n" not in str(e.value)


@pytest.mark.skipif(has_gpu(), reason="checks the message without a GPU")
def test_running_a_cuda_program_without_a_gpu_says_so(example):
    p = conflux.compile(example, target="cuda", arch="sm_90", tune="none")
    with pytest.raises(conflux.UserError, match="no CUDA device"):
        p.run({"x": np.zeros((1, 3, 16, 16), np.float32)})


def test_a_reference_program_saves_and_loads(tmp_path, example):
    p = conflux.compile(example, target="ref")
    p.save(tmp_path / "r.cfx")
    q = conflux.load(tmp_path / "r.cfx")
    assert q.target == "ref" and q.arch is None
    x = {"x": np.random.default_rng(5).standard_normal((1, 3, 16, 16)).astype(np.float32)}
    assert np.array_equal(q.run(x)["y"], p.run(x)["y"])
    # The command line runs what Python saved.
    tool = os.environ.get("CONFLUX_TOOL")
    if tool:
        r = subprocess.run([tool, "run", str(tmp_path / "r.cfx")], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert "target ref" in r.stdout


def test_the_package_imports_without_a_gpu():
    r = subprocess.run([sys.executable, "-c", "import conflux; print(conflux.__version__)"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == conflux.__version__


@pytest.mark.gpu
@pytest.mark.parametrize("model_dir", model_dirs(), ids=lambda p: p.name)
def test_cuda_matches_onnxruntime(model_dir):
    xs, ys = stored_data(model_dir)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p = conflux.compile(model_dir / "model.onnx", target="cuda", tune="none")
    got = p.run(xs)
    for name, want in ys.items():
        tol = 2e-2 if want.dtype == np.float16 else 5e-3  # TF32 products
        np.testing.assert_allclose(got[name].astype(np.float64), want.astype(np.float64),
                                   rtol=tol, atol=tol, err_msg=name)


@pytest.mark.gpu
def test_a_loaded_program_gives_bit_identical_outputs_in_a_new_process(tmp_path, example):
    x = np.random.default_rng(3).standard_normal((1, 3, 16, 16)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    p = conflux.compile(example, target="cuda", fp16=True, tune="none")
    want = p.run({"x": x})["y"]
    p.save(tmp_path / "m.cfx")
    code = ("import conflux, numpy as np, sys; d = sys.argv[1]; "
            "p = conflux.load(d + '/m.cfx'); "
            "np.save(d + '/y.npy', p.run({'x': np.load(d + '/x.npy')})['y'])")
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    assert np.array_equal(np.load(tmp_path / "y.npy"), want)


@pytest.mark.gpu
def test_perf_returns_the_numbers_conflux_perf_prints(example):
    p = conflux.compile(example, target="cuda", tune="none")
    r = p.perf(iterations=5, warmup=2)
    assert r["median_ms"] > 0 and r["launches"] == len(r["steps"]) and r["cuda_graph"]


@pytest.mark.gpu
def test_torch_cuda_tensors_run_in_place_on_the_callers_stream(example):
    torch = pytest.importorskip("torch")
    p = conflux.compile(example, target="cuda", fp16=True, tune="none")
    x = np.random.default_rng(4).standard_normal((1, 3, 16, 16)).astype(np.float32)
    want = p.run({"x": x})["y"]
    xt = torch.from_numpy(x).cuda()
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        got = p.run({"x": xt})
        y = got["y"]
        assert isinstance(y, torch.Tensor) and y.device == xt.device and y.dtype == torch.float32
    side.synchronize()
    assert np.array_equal(y.cpu().numpy(), want)
    # Outputs given: written in place.
    out = torch.empty((1, 256, 8), device="cuda")
    assert p.run({"x": xt}, outputs={"y": out})["y"] is out
    torch.cuda.synchronize()
    assert np.array_equal(out.cpu().numpy(), want)
    with pytest.raises(TypeError, match="expects f32"):
        p.run({"x": xt.half()})
    with pytest.raises(conflux.UserError, match="has shape"):
        p.run({"x": xt[:, :2]})
    with pytest.raises(conflux.UserError, match="pass a contiguous tensor"):
        p.run({"x": torch.randn(1, 16, 16, 3, device="cuda").permute(0, 3, 1, 2)})


@pytest.mark.gpu
def test_a_program_for_another_architecture_is_refused_by_name(tmp_path, example):
    conflux.compile(example, target="cuda", arch="sm_80", tune="none").save(tmp_path / "old.cfx")
    p = conflux.load(tmp_path / "old.cfx")
    assert p.arch == "sm_80"
    with pytest.raises(conflux.UserError, match="compiled for sm_80 but device 0"):
        p.run({"x": np.zeros((1, 3, 16, 16), np.float32)})


def test_dlpack_tensors_are_described_and_host_memory_is_refused(example):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    d = conflux._conflux.dlpack_describe(x, None)
    assert (d["device_type"], d["code"], d["bits"], d["lanes"]) == (1, 2, 32, 1)
    assert d["shape"] == (2, 3) and d["data"] == x.__array_interface__["data"][0]

    class ClaimsToBeOnTheGpu:
        """Says CUDA in __dlpack_device__, but its capsule is host memory."""

        def __init__(self, array):
            self.array = array

        def __dlpack_device__(self):
            return (2, 0)

        def __dlpack__(self, stream=None):
            return self.array.__dlpack__()

    p = conflux.compile(example, target="cuda", arch="sm_90", tune="none")
    fake = ClaimsToBeOnTheGpu(np.zeros((1, 3, 16, 16), np.float32))
    with pytest.raises(conflux.UserError, match=r"input 'x' is not GPU memory \(DLPack device "
                                                r"type 1\)"):
        p.run({"x": fake}, outputs={"y": fake})


@pytest.mark.gpu
def test_a_tensor_with_only_dlpack_runs_in_place(example):
    torch = pytest.importorskip("torch")

    class OnlyDlpack:
        def __init__(self, t):
            self.t = t

        def __dlpack_device__(self):
            return self.t.__dlpack_device__()

        def __dlpack__(self, stream=None):
            return self.t.__dlpack__(stream=stream)

    p = conflux.compile(example, target="cuda", tune="none")
    x = np.random.default_rng(6).standard_normal((1, 3, 16, 16)).astype(np.float32)
    out = torch.empty((1, 256, 8), device="cuda")
    p.run({"x": OnlyDlpack(torch.from_numpy(x).cuda())}, outputs={"y": out})
    torch.cuda.synchronize()
    assert np.array_equal(out.cpu().numpy(), p.run({"x": x})["y"])
