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

    def run(self, inputs):
        """Runs the program on a dict of numpy arrays (name -> array); returns name -> array.
        An input not given gets random values (seed 0, as `conflux run`), with a warning."""
        if not isinstance(inputs, dict):
            raise TypeError(f"inputs: expected a dict of name -> numpy array, got "
                            f"{type(inputs).__name__}")
        return self._impl.run(inputs)

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


def compile(model, *, target="auto", fp16=False, bf16=False, batch=None, input_dims=None,
            tune="quick", problem_cache=None, arch=""):
    """Compiles an ONNX model: a path, the model's bytes, or an onnx.ModelProto.

    target: 'cuda' (generated GPU kernels; compiling needs no GPU, running does), 'ref' (the
    reference interpreter), or 'auto' (cuda when a GPU is present, else ref, with a warning).
    fp16/bf16: run an f32 model in f16 or bf16 (inputs and outputs stay f32).
    batch: the value of every symbolic dim in axis 0; input_dims: {name: full shape} for inputs
    with other symbolic dims. tune: 'none', 'quick' or 'exhaustive'; problem_cache: the SQLite
    file tuned configs are kept in (default: the user's cache directory).
    """
    request = _conflux.CompileRequest()
    request.target, request.fp16, request.bf16, request.tune = target, fp16, bf16, tune
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
    return Program(_conflux.load(os.fspath(path)), os.path.basename(os.fspath(path)))
