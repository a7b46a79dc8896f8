"""Conflux from Python: compile an ONNX model, run it, save it, load it.

    import conflux
    p = conflux.compile("model.onnx", fp16=True)      # on the GPU when there is one
    outputs = p.run({"input": x})                      # numpy arrays in, numpy arrays out
    p.save("model.cfx")                                # later: conflux.load("model.cfx")

Errors in what you give (a bad model, a wrong input, a bad file) raise UserError, a ValueError,
with the same one-line message the command line prints; a wrong input dtype raises TypeError.
InternalError means a bug in Conflux.
"""

import os
import warnings

from . import _conflux

__version__ = _conflux.__version__
__all__ = ["compile", "load", "Program", "TensorInfo", "UserError", "InternalError"]


class UserError(ValueError):
    """What was given is wrong: the model, an input, an option or a file. The message names it."""


class InternalError(RuntimeError):
    """A bug in Conflux."""


_conflux._set_error_types(UserError, InternalError)
TensorInfo = _conflux.TensorInfo


class Program:
    """A compiled program: for the GPU (target 'cuda') or the reference interpreter ('ref')."""

    def __init__(self, impl, model_name):
        self._impl = impl
        self._model = model_name

    @property
    def target(self):
        """'cuda' or 'ref'."""
        return self._impl.target

    @property
    def arch(self):
        """The GPU architecture the kernels were compiled for ('sm_90'), None for 'ref'."""
        return self._impl.arch

    @property
    def inputs(self):
        """The inputs, in order: TensorInfo(name, dtype, shape)."""
        return list(self._impl.inputs)

    @property
    def outputs(self):
        """The outputs, in order: TensorInfo(name, dtype, shape)."""
        return list(self._impl.outputs)

    def run(self, inputs, *, outputs=None, stream=None, cuda_graph=True):
        """Runs the program on a dict of inputs (name -> array); returns name -> array.

        numpy arrays: copied to the GPU and back (or run on the reference target). An input not
        given gets random values (seed 0, as `conflux run`), with a warning.

        GPU tensors (__cuda_array_interface__ or __dlpack__ on a CUDA device: torch CUDA
        tensors, CuPy arrays, JAX arrays with outputs given):
        read where they are, no copies, and the outputs are new tensors of the same library on
        the same device (or the `outputs` dict's, written in place). The run is queued on the
        caller's current stream (torch's or CuPy's; `stream` to give another cudaStream_t as an
        int) and returns without waiting, as a kernel launch of that library does. Inputs must be
        dense, row-major, of the program's dtypes and shapes."""
        if not isinstance(inputs, dict):
            raise TypeError(f"inputs: expected a dict of name -> array, got "
                            f"{type(inputs).__name__}")
        if any(_is_device_tensor(x) for x in inputs.values()) or outputs:
            return self._run_on_device(inputs, outputs, stream, cuda_graph)
        return self._impl.run(inputs)

    def _run_on_device(self, inputs, outputs, stream, cuda_graph):
        wanted = {t.name: t for t in self.inputs}
        pointers = {}
        for name, x in inputs.items():
            if name not in wanted:
                known = ", ".join(t.name for t in self.inputs) or "none"
                raise UserError(f"input '{name}': the program has no such input; its inputs "
                                f"are: {known}")
            pointers[name] = _device_pointer(x, wanted[name], f"input '{name}'", None)
        missing = [t.name for t in self.inputs if t.name not in inputs]
        if missing:
            raise UserError(f"input '{missing[0]}' is not given (a run on GPU tensors takes "
                            f"every input)")
        like = next(iter(inputs.values()), None)
        result = dict(outputs or {})
        out_pointers = {}
        for t, strides in zip(self.outputs, self._impl.output_strides):
            if t.name not in result:
                result[t.name] = _empty_like_library(like, t, strides)
            out_pointers[t.name] = _device_pointer(result[t.name], t, f"output '{t.name}'",
                                                   strides)
        if stream is None:
            stream = _current_stream(like)
        self._impl.run_on_device(pointers, out_pointers, int(stream), cuda_graph)
        return {t.name: result[t.name] for t in self.outputs}

    def perf(self, inputs=None, *, warmup=10, iterations=50, cuda_graph=True):
        """Times the program as `conflux perf` does (CUDA events after warm-up); returns its
        numbers as a dict (median_ms, p90_ms, p99_ms, eager_median_ms, launches, steps, ...).
        Inputs not given are random, as in run()."""
        return self._impl.perf(inputs or {}, warmup, iterations, cuda_graph)

    def save(self, path):
        """Writes the compiled program to `path` (.cfx); conflux.load(path) or
        `conflux run path` run it with no compile."""
        self._impl.save(os.fspath(path), self._model)

    def __repr__(self):
        arch = f", arch='{self.arch}'" if self.arch else ""
        return (f"<conflux.Program target='{self.target}'{arch}, "
                f"{len(self.inputs)} inputs, {len(self.outputs)} outputs>")


# DLPack/array-interface type strings of each dtype.
_TYPESTR = {"f32": "<f4", "f16": "<f2", "f64": "<f8", "i8": "|i1", "u8": "|u1", "i32": "<i4",
            "i64": "<i8", "bool": "|b1"}
_TORCH_TYPE = {"f32": "float32", "f16": "float16", "bf16": "bfloat16", "f64": "float64",
               "i8": "int8", "u8": "uint8", "i32": "int32", "i64": "int64", "bool": "bool"}


# DLPack's device types for GPU memory (kDLCUDA, kDLCUDAManaged) and its dtypes (code, bits).
_DLPACK_GPU = (2, 13)
_DLPACK_TYPES = {(2, 32): "f32", (2, 16): "f16", (2, 64): "f64", (4, 16): "bf16", (0, 8): "i8",
                 (1, 8): "u8", (0, 32): "i32", (0, 64): "i64", (6, 8): "bool"}


def _is_device_tensor(x):
    if hasattr(x, "__cuda_array_interface__"):
        return True
    device = getattr(x, "__dlpack_device__", None)
    return device is not None and device()[0] in _DLPACK_GPU


def _device_pointer(x, info, what, strides):
    """The device address of x after checking its dtype, shape and layout against info."""
    if not _is_device_tensor(x):
        raise TypeError(f"{what}: expected a GPU tensor (__cuda_array_interface__ or __dlpack__ "
                        f"on a CUDA device), got {type(x).__name__}")
    if not hasattr(x, "__cuda_array_interface__"):
        return _dlpack_pointer(x, info, what, strides)
    cai = x.__cuda_array_interface__
    typestr = cai["typestr"]
    expected = _TYPESTR.get(info.dtype)
    # bf16 has no array-interface type string; torch says '<V2' for it.
    if info.dtype == "bf16":
        ok = typestr in ("<V2", "|V2") and getattr(x, "dtype", None) is not None and \
            str(x.dtype).endswith("bfloat16")
    else:
        ok = typestr == expected
    if not ok:
        raise TypeError(f"{what} is {getattr(x, 'dtype', typestr)} but the program expects "
                        f"{info.dtype}")
    # Array-interface strides are in bytes ('<f4': 4 bytes an element).
    byte_strides = cai.get("strides")
    _check_layout(what, info, strides, tuple(cai["shape"]),
                  None if byte_strides is None else [s // int(typestr[2:]) for s in byte_strides])
    return cai["data"][0]


def _dlpack_pointer(x, info, what, strides):
    d = _conflux.dlpack_describe(x, None)
    if d["device_type"] not in _DLPACK_GPU:
        raise UserError(f"{what} is not GPU memory (DLPack device type {d['device_type']})")
    got = _DLPACK_TYPES.get((d["code"], d["bits"])) if d["lanes"] == 1 else None
    if got != info.dtype:
        raise TypeError(f"{what} is {got or 'a DLPack type ' + str((d['code'], d['bits']))} but "
                        f"the program expects {info.dtype}")
    _check_layout(what, info, strides, tuple(d["shape"]), d["strides"])
    return d["data"]


def _check_layout(what, info, program_strides, shape, strides):
    """The tensor's shape must be the program's, and its strides (in elements; None: row-major)
    those the program reads (row-major for inputs, program_strides for outputs) on every axis
    longer than 1."""
    if shape != tuple(info.shape):
        raise UserError(f"{what} has shape {list(shape)} but the program expects "
                        f"{list(info.shape)}")
    want = list(program_strides) if program_strides is not None else _row_major(shape)
    have = _row_major(shape) if strides is None else list(strides)
    if [g for g, n in zip(have, shape) if n > 1] != [w for w, n in zip(want, shape) if n > 1]:
        raise UserError(f"{what} has strides {have} (elements) but the program reads {want}; "
                        f"pass a contiguous tensor")


def _row_major(shape):
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return list(reversed(strides))


def _empty_like_library(like, info, strides):
    """An output buffer of the input's library on its device, in the program's layout."""
    module = type(like).__module__.split(".")[0]
    if module == "torch":
        import torch
        return torch.empty_strided(tuple(info.shape), tuple(strides),
                                   dtype=getattr(torch, _TORCH_TYPE[info.dtype]),
                                   device=like.device)
    if module == "cupy":
        import cupy
        from cupy.lib.stride_tricks import as_strided
        space = 1 + sum((n - 1) * s for n, s in zip(info.shape, strides) if n > 0)
        base = cupy.empty(space if all(info.shape) else 0, dtype=_TORCH_TYPE[info.dtype])
        itemsize = base.dtype.itemsize
        return as_strided(base, tuple(info.shape), tuple(s * itemsize for s in strides))
    raise UserError(f"output '{info.name}': cannot allocate it for inputs of "
                    f"{type(like).__name__}; pass outputs={{name: tensor}}")


def _current_stream(like):
    """The cudaStream_t the caller's library queues work on, as an int."""
    module = type(like).__module__.split(".")[0]
    if module == "torch":
        import torch
        handle = torch.cuda.current_stream(like.device).cuda_stream
        return handle or 1  # torch's default stream is the legacy stream: cudaStreamLegacy
    if module == "cupy":
        import cupy
        return cupy.cuda.get_current_stream().ptr or 1
    return 0  # the program's own stream, waiting for the run


def compile(model, *, target="auto", fp16=False, bf16=False, narrow_outputs=False, batch=None,
            input_dims=None, tune="quick", problem_cache=None, arch=""):
    """Compiles an ONNX model: a path, the model's bytes, or an onnx.ModelProto.

    target: 'cuda' (generated GPU kernels; compiling needs no GPU, running does), 'ref' (the
    reference interpreter), or 'auto' (cuda when a GPU is present, else ref, with a warning).
    fp16/bf16: run an f32 model in f16 or bf16 (inputs and outputs stay f32, unless
    narrow_outputs: then the outputs come in f16/bf16, as a PyTorch model made .half() gives
    them).
    batch: the value of every symbolic dim in axis 0; input_dims: {name: full shape} for inputs
    with other symbolic dims. tune: 'none', 'quick' or 'exhaustive'; problem_cache: the SQLite
    file tuned configs are kept in (default: the user's cache directory).
    """
    request = _conflux.CompileRequest()
    request.target, request.fp16, request.bf16, request.tune = target, fp16, bf16, tune
    request.narrow_outputs = narrow_outputs
    request.batch = batch
    request.input_dims = {k: [int(d) for d in v] for k, v in (input_dims or {}).items()}
    request.problem_cache = None if problem_cache is None else os.fspath(problem_cache)
    request.arch = arch
    if isinstance(model, (str, os.PathLike)):
        name = os.path.basename(os.fspath(model))
        note, impl = _conflux.compile_path(os.fspath(model), request)
    elif isinstance(model, (bytes, bytearray, memoryview)):
        name = "<bytes>"
        note, impl = _conflux.compile_bytes(bytes(model), request)
    elif hasattr(model, "SerializeToString"):
        name = getattr(getattr(model, "graph", None), "name", "") or "<onnx.ModelProto>"
        note, impl = _conflux.compile_bytes(model.SerializeToString(), request)
    else:
        raise TypeError(f"model: expected a path, bytes or an onnx.ModelProto, got "
                        f"{type(model).__name__}")
    if note:
        warnings.warn(f"conflux: {note}", stacklevel=2)
    return Program(impl, name)


def load(path):
    """Loads a program saved by Program.save or `conflux compile -o` (.cfx): no compile, no
    tuning. A file that is not a .cfx, truncated, corrupted or of another format version raises
    UserError naming the reason."""
    impl = _conflux.load(os.fspath(path))
    # Saved again, it still names the model it was compiled from.
    return Program(impl, impl.model or os.path.basename(os.fspath(path)))
