"""CuPy's user kernels and CUDA graph capture for the strict stand-in (strict_xp), checked as CuPy checks them.

A NumPy-backed module cannot compile CUDA C. What it can do is take the same constructor arguments as
cupy.ElementwiseKernel / ReductionKernel / RawKernel, refuse the calls CuPy (or the CUDA launch) would refuse, and
then run a NumPy function of the same semantics, the kernel's `twin`, which the code that declared the kernel
attaches (kernelcore/device/declare.py). So a fused kernel's Python side (its arguments, dtypes, shapes, launch
sizes) is tested without a GPU; the CUDA body itself is not run here.

What a call is checked for:
* elementwise and reduction kernels: device arrays only (a host NumPy array is CuPy's "Unsupported type"), the
  argument count, each typed parameter given its dtype exactly (CuPy would cast silently: on a device that is one
  more copy and launch, so the stand-in asks for the declared dtype), a type placeholder (`T`) bound to one dtype
  across the arguments, broadcastable shapes, outputs of the broadcast shape;
* raw kernels: grid and block of 1 to 3 positive ints within CUDA's limits, `args` a tuple matching the kernel's
  C signature (read from `extern "C" __global__ void name(...)`): a device array (C-contiguous, the pointer's
  element type) for each pointer and a NumPy scalar of the parameter's type for each value (a Python int or
  float has no C type: CuPy guesses one), and no write to a `const` pointer's array.

Graph capture (`cuda.Stream.begin_capture` / `end_capture` -> `Graph.launch`): while a stream captures, every device
operation strict_xp runs is recorded with the buffers it read and wrote, and `launch` runs them again on those
same buffers, as a CUDA graph replays its kernels. Whatever CUDA refuses inside a capture is refused here with
`CUDARuntimeError`: reading a value back to the host (a sync), copying host data to the device, drawing random
numbers (a replay would draw the same ones again). A real capture runs nothing until the graph is launched; so
that code relying on captured values before the launch fails here too, `end_capture` puts every array written in
place during the capture back as it was and fills the arrays the capture made with NaN (or -1 for integers).
"""
from __future__ import annotations

import re
from contextlib import contextmanager

import numpy as np

# ---------------------------------------------------------------------------------------------------------------
# parameters: CuPy's "T x, raw float32 w" strings and C signatures
# ---------------------------------------------------------------------------------------------------------------
_CUPY_TYPES = {"bool": np.bool_, "int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64,
               "uint8": np.uint8, "uint32": np.uint32, "uint64": np.uint64, "float16": np.float16,
               "float32": np.float32, "float64": np.float64}
_C_TYPES = {"bool": np.bool_, "char": np.int8, "unsigned char": np.uint8, "short": np.int16, "int": np.int32,
            "unsigned int": np.uint32, "long long": np.int64, "unsigned long long": np.uint64,
            "float": np.float32, "double": np.float64}
MAX_THREADS_PER_BLOCK = 1024
MAX_BLOCK = (1024, 1024, 64)
MAX_GRID = (2 ** 31 - 1, 65535, 65535)


class CUDARuntimeError(RuntimeError):
    """What CuPy raises when the CUDA runtime refuses a call (cupy_backends.cuda.api.runtime.CUDARuntimeError)."""


class Param:
    __slots__ = ("name", "dtype", "placeholder", "raw")

    def __init__(self, name, dtype, placeholder, raw):
        self.name, self.dtype, self.placeholder, self.raw = name, dtype, placeholder, raw

    def __repr__(self):
        return f"{'raw ' if self.raw else ''}{self.placeholder or np.dtype(self.dtype).name} {self.name}"


def parse_params(text: str) -> tuple[Param, ...]:
    """CuPy's parameter list ("T x, raw float32 w, int32 n") as Params; ValueError on a type it does not know."""
    params = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        words = part.split()
        raw = words[0] == "raw"
        if raw:
            words = words[1:]
        if len(words) != 2 or not words[1].isidentifier():
            raise ValueError(f"Syntax error: {part!r}")
        type_name, name = words
        if type_name in _CUPY_TYPES:
            params.append(Param(name, np.dtype(_CUPY_TYPES[type_name]), None, raw))
        elif type_name.isidentifier() and type_name[0].isupper():
            params.append(Param(name, None, type_name, raw))
        else:
            raise ValueError(f"Unknown type {type_name!r} in {part!r}")
    return tuple(params)


_SIGNATURE = re.compile(r'extern\s+"C"\s+__global__\s+void\s+(\w+)\s*\(([^)]*)\)')


def c_signature(code: str, name: str) -> tuple[tuple[str, np.dtype, bool, bool], ...]:
    """(name, element dtype, is pointer, is const) of each parameter of kernel `name` in `code`."""
    for found in _SIGNATURE.finditer(code):
        if found.group(1) != name:
            continue
        out = []
        for part in filter(None, (p.strip() for p in found.group(2).split(","))):
            m = re.fullmatch(r"(const\s+)?([a-z ]+?)\s*(\*?)\s*(?:__restrict__\s*)?(\w+)", part)
            if m is None or m.group(2) not in _C_TYPES:
                raise ValueError(f"kernel {name}: parameter {part!r} has a type the stand-in does not know")
            out.append((m.group(4), np.dtype(_C_TYPES[m.group(2)]), bool(m.group(3)), bool(m.group(1))))
        return tuple(out)
    raise ValueError(f'no extern "C" __global__ kernel named {name!r} in the code')


# ---------------------------------------------------------------------------------------------------------------
# the kernels
# ---------------------------------------------------------------------------------------------------------------
class _Arrays:
    """The stand-in's device array type, its allocator and the reader of the NumPy buffer an array holds, given by
    strict_xp when it loads (this module is below it)."""
    ndarray = None
    empty = None
    buffer_of = None


_arrays = _Arrays()


def use_arrays(ndarray_type, empty, buffer_of) -> None:
    _arrays.ndarray, _arrays.empty, _arrays.buffer_of = ndarray_type, empty, staticmethod(buffer_of)


class _KernelBase:
    twin = None  # the NumPy function of the same semantics; set by whoever declared the kernel

    def _need_twin(self):
        if self.twin is None:
            raise NotImplementedError(f"kernel {self.name!r}: the strict stand-in cannot compile CUDA; give the "
                                      f"kernel a NumPy twin")


def _check_typed(kernel: str, params, args, ndarray) -> dict:
    """Placeholder -> dtype, after checking each argument against its parameter as the class docstring says."""
    bound: dict[str, np.dtype] = {}
    for p, a in zip(params, args):
        if isinstance(a, np.ndarray):
            raise TypeError(f"Unsupported type {type(a)}: kernel {kernel!r} argument {p.name!r} is a host (NumPy) "
                            f"array; copy it with xp.asarray first")
        if isinstance(a, ndarray):
            dt = a.dtype
        elif p.raw:
            raise TypeError(f"kernel {kernel!r}: raw argument {p.name!r} must be a device array, got "
                            f"{type(a).__name__}")
        elif isinstance(a, np.generic):
            dt = a.dtype
        elif isinstance(a, (bool, int, float)):
            continue  # a Python number takes the parameter's type
        else:
            raise TypeError(f"Unsupported type {type(a)} for kernel {kernel!r} argument {p.name!r}")
        if p.dtype is not None:
            if dt != p.dtype:
                raise TypeError(f"kernel {kernel!r}: argument {p.name!r} is {dt}, declared {p.dtype} (the stand-in "
                                f"takes the declared dtype only: a cast on the device is one more launch)")
        elif bound.setdefault(p.placeholder, dt) != dt:
            raise TypeError(f"kernel {kernel!r}: type {p.placeholder} is bound to {bound[p.placeholder]} and "
                            f"argument {p.name!r} is {dt}")
    return bound


def _out_dtype(kernel, p: Param, bound) -> np.dtype:
    if p.dtype is not None:
        return p.dtype
    if p.placeholder not in bound:
        raise TypeError(f"kernel {kernel!r}: cannot decide the type {p.placeholder} of output {p.name!r}")
    return bound[p.placeholder]


class ElementwiseKernel(_KernelBase):
    """cupy.ElementwiseKernel: the twin takes the inputs (NumPy arrays and scalars) and returns the outputs' values,
    which are broadcast into the output arrays."""

    def __init__(self, in_params, out_params, operation, name="kernel", reduce_dims=True, preamble="",
                 no_return=False, return_tuple=False, loop_prep="", after_loop="", options=()):
        self.in_params, self.out_params = parse_params(in_params), parse_params(out_params)
        self.operation, self.name, self.preamble = operation, name, preamble
        self.return_tuple = return_tuple
        self.nin, self.nout = len(self.in_params), len(self.out_params)

    def __call__(self, *args, size=None, block_size=None, stream=None):
        sx = _arrays  # the stand-in's array type (strict_xp)
        if len(args) not in (self.nin, self.nin + self.nout):
            raise TypeError(f"Wrong number of arguments for {self.name!r}: {len(args)} given, {self.nin} inputs "
                            f"and {self.nout} outputs declared")
        self._need_twin()
        params = self.in_params + self.out_params
        bound = _check_typed(self.name, params, args, sx.ndarray)
        shape = self._shape(args, size, sx.ndarray)
        outs = list(args[self.nin:])
        for i, o in enumerate(outs):
            if not isinstance(o, sx.ndarray):
                raise TypeError(f"kernel {self.name!r}: output {self.out_params[i].name!r} must be a device array")
            if not self.out_params[i].raw and o.shape != shape:
                raise ValueError(f"kernel {self.name!r}: output {self.out_params[i].name!r} has shape {o.shape}, "
                                 f"the arguments broadcast to {shape}")
        if not outs:
            outs = [sx.empty(shape, dtype=_out_dtype(self.name, p, bound)) for p in self.out_params]
        ins = [sx.buffer_of(a) if isinstance(a, sx.ndarray) else a for a in args[:self.nin]]
        raw_outs = [sx.buffer_of(o) for o in outs]

        def run():
            values = self.twin(*ins)
            values = values if type(values) is tuple else (values,)
            if len(values) != self.nout:
                raise ValueError(f"twin of {self.name!r} gave {len(values)} values for {self.nout} outputs")
            for o, v in zip(raw_outs, values):
                o[...] = v
        launch(run, raw_outs, self.name)
        return tuple(outs) if self.nout > 1 or self.return_tuple else outs[0]

    def _shape(self, args, size, ndarray) -> tuple:
        shapes = [a.shape for p, a in zip(self.in_params + self.out_params, args)
                  if isinstance(a, ndarray) and not p.raw]
        if not shapes:
            if size is None:
                raise ValueError(f"kernel {self.name!r}: loop size is undecided (every argument raw: give size=)")
            return (int(size),)
        try:
            return tuple(np.broadcast_shapes(*shapes))
        except ValueError as e:
            raise ValueError(f"kernel {self.name!r}: shapes {shapes} do not broadcast") from e


class ReductionKernel(_KernelBase):
    """cupy.ReductionKernel: the twin takes the inputs and `axis`, `keepdims` and returns the reduced values."""

    def __init__(self, in_params, out_params, map_expr, reduce_expr, post_map_expr, identity, name="reduce_kernel",
                 reduce_type=None, reduce_dims=True, preamble="", options=()):
        self.in_params, self.out_params = parse_params(in_params), parse_params(out_params)
        if len(self.out_params) != 1:
            raise ValueError("a ReductionKernel has one output")
        self.map_expr, self.reduce_expr, self.post_map_expr = map_expr, reduce_expr, post_map_expr
        self.identity, self.name, self.reduce_type, self.preamble = identity, name, reduce_type, preamble
        self.nin = len(self.in_params)

    def __call__(self, *args, out=None, axis=None, keepdims=False, stream=None):
        sx = _arrays  # the stand-in's array type (strict_xp)
        if len(args) != self.nin:
            raise TypeError(f"Wrong number of arguments for {self.name!r}: {len(args)} given, {self.nin} declared")
        self._need_twin()
        bound = _check_typed(self.name, self.in_params, args, sx.ndarray)
        ins = [sx.buffer_of(a) if isinstance(a, sx.ndarray) else a for a in args]
        dtype = _out_dtype(self.name, self.out_params[0], bound)
        shapes = [a.shape for a in ins if isinstance(a, np.ndarray)]
        try:
            full = np.broadcast_shapes(*shapes)
        except ValueError as e:
            raise ValueError(f"kernel {self.name!r}: shapes {shapes} do not broadcast") from e
        shape = np.empty(full, dtype=np.bool_).sum(axis=axis, keepdims=keepdims).shape  # AxisError as NumPy's
        if out is None:
            out = sx.empty(shape, dtype=dtype)
        elif not isinstance(out, sx.ndarray) or out.shape != shape or out.dtype != dtype:
            raise ValueError(f"kernel {self.name!r}: out must be a {dtype} device array of shape {shape}")
        raw = sx.buffer_of(out)

        def run():
            raw[...] = self.twin(*ins, axis=axis, keepdims=keepdims)
        launch(run, [raw], self.name)
        return out


class RawKernel(_KernelBase):
    """cupy.RawKernel: the twin takes (grid, block, *args) with arrays as NumPy arrays and writes its outputs."""

    def __init__(self, code, name, options=(), backend="nvrtc", translate_cucomplex=False,
                 enable_cooperative_groups=False, jitify=False):
        self.code, self.name, self.options = code, name, options
        self.signature = c_signature(code, name)

    def __call__(self, grid, block, args, *, shared_mem=0):
        sx = _arrays  # the stand-in's array type (strict_xp)
        grid, block = _dims("grid", grid, MAX_GRID), _dims("block", block, MAX_BLOCK)
        if int(np.prod(block)) > MAX_THREADS_PER_BLOCK:
            raise CUDARuntimeError(f"cudaErrorInvalidValue: kernel {self.name!r}: block {block} has more than "
                                   f"{MAX_THREADS_PER_BLOCK} threads")
        if type(args) is not tuple:
            raise TypeError(f"kernel {self.name!r}: args must be a tuple, got {type(args).__name__}")
        if len(args) != len(self.signature):
            raise TypeError(f"kernel {self.name!r} takes {len(self.signature)} arguments, {len(args)} given")
        self._need_twin()
        for (pname, dtype, pointer, _), a in zip(self.signature, args):
            self._check_arg(pname, dtype, pointer, a, sx.ndarray)
        raw = tuple(sx.buffer_of(a) if isinstance(a, sx.ndarray) else a for a in args)
        const = [r for (_, _, pointer, is_const), r in zip(self.signature, raw) if pointer and is_const]
        written = [r for (_, _, pointer, is_const), r in zip(self.signature, raw) if pointer and not is_const]

        def run():
            before = [c.copy() for c in const]
            self.twin(grid, block, *raw)
            for b, c in zip(before, const):
                if not np.array_equal(b, c, equal_nan=c.dtype.kind == "f"):
                    raise RuntimeError(f"twin of {self.name!r} wrote an array its kernel reads through a const "
                                       f"pointer")
        launch(run, written, self.name)

    def _check_arg(self, pname, dtype, pointer, a, ndarray):
        if pointer:
            if isinstance(a, np.ndarray):
                raise TypeError(f"Unsupported type {type(a)}: kernel {self.name!r} argument {pname!r} is a host "
                                f"array")
            if not isinstance(a, ndarray) or a.dtype != dtype:
                raise TypeError(f"kernel {self.name!r}: argument {pname!r} must be a {dtype} device array, got "
                                f"{getattr(a, 'dtype', type(a).__name__)}")
            if not _arrays.buffer_of(a).flags.c_contiguous:
                raise ValueError(f"kernel {self.name!r}: argument {pname!r} is not C-contiguous; a raw kernel "
                                 f"indexes its memory flat")
        elif not isinstance(a, np.generic) or a.dtype != dtype:
            raise TypeError(f"kernel {self.name!r}: argument {pname!r} must be a numpy.{dtype.name} scalar, got "
                            f"{type(a).__name__} (a Python number has no C type: CuPy guesses one)")


def _dims(what: str, v, limits) -> tuple:
    dims = (v,) if isinstance(v, (int, np.integer)) else v
    if type(dims) is not tuple or not 1 <= len(dims) <= 3 or not all(isinstance(d, (int, np.integer)) for d in dims):
        raise TypeError(f"{what} must be an int or a tuple of 1 to 3 ints, got {v!r}")
    if any(not 0 < d <= m for d, m in zip(dims, limits)):
        raise CUDARuntimeError(f"cudaErrorInvalidValue: {what} {dims} is outside 1..{limits[:len(dims)]}")
    return tuple(int(d) for d in dims)


# ---------------------------------------------------------------------------------------------------------------
# streams and graphs
# ---------------------------------------------------------------------------------------------------------------
class _Capture:
    __slots__ = ("steps", "names", "saved", "made")

    def __init__(self):
        self.steps = []   # callables that redo each operation on its buffers, in order
        self.names = []   # what each step is (a function's or a kernel's name), for counting
        self.saved = []   # (array written in place, its values before the first such write)
        self.made = []    # arrays the capture allocated


_capturing: list = []  # the open capture, if any (one stream captures at a time here)


def capturing() -> bool:
    return bool(_capturing)


def refuse(what: str) -> None:
    """CUDARuntimeError inside a capture, where CUDA refuses `what`."""
    if _capturing:
        raise CUDARuntimeError(f"cudaErrorStreamCaptureUnsupported: operation not permitted when stream is "
                               f"capturing ({what})")


def launch(run, written, name: str = "kernel") -> None:
    """Run one kernel now; inside a capture also record it (and keep what it overwrites for end_capture)."""
    if _capturing:
        keep_before_write(written)
        _capturing[0].steps.append(run)
        _capturing[0].names.append(name)
    run()


def keep_before_write(arrays) -> None:
    cap = _capturing[0]
    for a in arrays:
        if isinstance(a, np.ndarray):
            cap.saved.append((a, a.copy()))


def record(redo, made=(), name: str = "") -> None:
    """Inside a capture, record an operation already run: `redo()` runs it again on the same buffers; `made`
    are arrays it allocated (filled with garbage when the capture ends, as a capture computes nothing)."""
    if _capturing:
        _capturing[0].steps.append(redo)
        _capturing[0].names.append(name)
        _capturing[0].made.extend(m for m in made if isinstance(m, np.ndarray))


def _garbage(dtype):
    """What fills an array a capture made: NaN, or an integer's largest value, or True."""
    if dtype.kind in "fc":
        return np.nan
    return np.iinfo(dtype).max if dtype.kind in "iu" else True


class Graph:
    """cupy.cuda.graph.Graph: `launch()` runs the recorded operations again on their buffers."""

    def __init__(self, steps, names=()):
        self._steps = tuple(steps)
        self.operations = tuple(names)  # stand-in only: what each recorded step is

    def launch(self, stream=None):
        if _capturing:
            raise CUDARuntimeError("cudaErrorStreamCaptureUnsupported: a graph launched inside a capture")
        for step in self._steps:
            step()

    def upload(self, stream=None):
        pass


class Stream:
    """cupy.cuda.Stream: the current stream inside `with`, and graph capture."""

    null = None

    def __init__(self, null=False, non_blocking=False, ptds=False):
        self._capture = None

    def __enter__(self):
        _current.append(self)
        return self

    def __exit__(self, *exc):
        _current.pop()

    def use(self):
        _current[:] = [self]
        return self

    def synchronize(self):
        refuse("stream synchronize")

    def is_capturing(self) -> bool:
        return self._capture is not None

    def begin_capture(self, mode=None):
        if mode not in (None, 0, 1, 2):
            raise CUDARuntimeError(f"cudaErrorInvalidValue: capture mode {mode!r}")
        if _capturing:
            raise CUDARuntimeError("cudaErrorIllegalState: a capture is already open")
        if self is Stream.null:
            raise CUDARuntimeError("cudaErrorStreamCaptureUnsupported: the null stream cannot capture")
        self._capture = _Capture()
        _capturing.append(self._capture)

    def end_capture(self) -> Graph:
        if self._capture is None:
            raise CUDARuntimeError("cudaErrorIllegalState: end_capture without begin_capture")
        cap, self._capture = self._capture, None
        _capturing.clear()
        for a in cap.made:  # what a capture made holds nothing until the graph runs
            a[...] = _garbage(a.dtype)
        for a, before in reversed(cap.saved):  # and what it overwrote is still as it was
            a[...] = before
        return Graph(cap.steps, cap.names)

    def abandon_capture(self) -> None:
        """Close a capture that failed part way (CuPy: end_capture in a finally), its graph dropped."""
        if self._capture is not None:
            self.end_capture()


Stream.null = Stream(null=True)
_current: list = []


def get_current_stream():
    return _current[-1] if _current else Stream.null


@contextmanager
def no_capture():
    """Tests: make sure no capture is left open by a failing test."""
    try:
        yield
    finally:
        _capturing.clear()


class _Device:
    def __init__(self, device=None):
        self.id = 0

    def synchronize(self):
        refuse("device synchronize")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass


def cuda_module():
    """The `xp.cuda` namespace of the stand-in: the names kernelcore uses."""
    import types
    cuda = types.ModuleType("kernelcore.testing.strict_xp.xp.cuda", "strict stand-in for cupy.cuda")
    cuda.Stream, cuda.Device, cuda.get_current_stream = Stream, _Device, get_current_stream
    cuda.graph = types.SimpleNamespace(Graph=Graph)
    cuda.runtime = types.SimpleNamespace(CUDARuntimeError=CUDARuntimeError, streamCaptureModeGlobal=0,
                                         streamCaptureModeThreadLocal=1, streamCaptureModeRelaxed=2)
    return cuda
