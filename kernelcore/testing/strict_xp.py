"""A NumPy-backed stand-in for CuPy: the GPU code path exercised without a GPU.

`xp` here is an array module whose arrays (`ndarray`) hold a NumPy array but behave like CuPy's where a
kernel written once against `ctx.xp` can go wrong on a GPU:

* Only names CuPy has exist. The namespace is the intersection of NumPy's and CuPy's public names, as
  listed in cupy_namespace.txt (generated from the real `cupy` by gen_cupy_namespace.py; the CuPy version
  is on its first line). The same holds for array attributes (`cupy.ndarray`), ufunc methods
  (`xp.add.at`) and `xp.random.RandomState`. Reaching for anything else raises AttributeError.
* What CuPy refuses, this refuses, with CuPy's exception type (decided from cupy/_core/core.pyx):
    - implicit conversion to a host array: `np.asarray(dev)`, `np.array(dev)`, `dev.__array__()` raise
      TypeError ("Implicit conversion to a NumPy array is not allowed");
    - a host (NumPy) array given to a device function or ufunc, or mixed into arithmetic with a device
      array (`dev + host`, `xp.where(c, host, dev)`, `xp.maximum(dev, host)`), raises TypeError
      ("Unsupported type"), as is a Python list given to a ufunc; NumPy *scalars* and Python numbers are
      fine, as in CuPy, and so are NumPy
      arrays used as indices or as values assigned into a device array (CuPy copies those);
    - `operator.index(dev)` fails: cupy.ndarray has no `__index__`, so `range(dev)`, `lst[dev]` and
      `slice(dev, ...)` fail on a GPU though they work on a 0-d NumPy integer array;
    - `np.<func>(dev)` dispatches (NEP 18, `__array_function__`) to the device function of that name
      when CuPy has one, else it fails with TypeError, as on CuPy.
* What CuPy allows but which synchronises with the device is allowed and counted in `stats`:
  `float(dev)`, `int(dev)`, `complex(dev)`, `bool(dev)` (size-1 arrays only), `.item()`, `.tolist()`,
  results shaped by the data (`xp.nonzero`, `xp.unique`, `dev[mask]`, ...), and explicit copies `.get()` / `xp.asnumpy` (to the host) and `xp.asarray(host)` (to the device).
  kernelcore's kernels read a scalar back on purpose in a few places (a loop condition, a bad-label
  check), so refusing these would be stricter than a GPU; `stats` lets a test see them.
* Results are device arrays, never NumPy scalars: `xp.sum(dev)` and `dev[0]` on a vector give a 0-d
  device array (NumPy returns `np.float64`, which would silently pass later host-only code).

* A top-level function called with a keyword (or more positional arguments) than CuPy's function of that
  name takes raises TypeError (cupy_signatures.txt, generated beside the name list; CuPy's ufuncs and
  Cython functions have no readable signature and are not checked).

* CuPy's user kernels (`xp.ElementwiseKernel`, `xp.ReductionKernel`, `xp.RawKernel`) and `xp.cuda` (streams, graph
  capture) come from strict_cuda.py: their calls are checked as CuPy checks them and run a NumPy twin; inside a
  graph capture every device operation here is recorded for the graph's replay, and what a capture refuses
  (syncs, host copies, random draws) raises CUDARuntimeError.

Why one file: the array class, the ufunc wrapper and the namespace builder share one pair of private conversions
(`_wrap`/`_unwrap`) that decide what CuPy refuses; split apart, each would have to export them.

Not modelled: keyword arguments of ndarray methods and ufuncs, dtype promotion differences, and performance. `xp.random` draws with NumPy's generator (CuPy's streams differ anyway).
"""
from __future__ import annotations

import functools
import operator
import types
from pathlib import Path

import numpy as np

from . import strict_cuda

NAMESPACE_FILE = Path(__file__).with_name("cupy_namespace.txt")
HOST_ONLY = ("Implicit conversion to a NumPy array is not allowed. "
             "Please use `.get()` to construct a NumPy array explicitly.")

stats = {"syncs": 0, "to_host": 0, "to_device": 0}


def reset_stats() -> None:
    for k in stats:
        stats[k] = 0


def _load_names() -> tuple[str, frozenset]:
    version, names = "", set()
    for line in NAMESPACE_FILE.read_text().splitlines():
        if line.startswith("#"):
            version = version or line.split()[2]
        elif line.strip():
            names.add(line.strip())
    return version, frozenset(names)


CUPY_VERSION, CUPY_NAMES = _load_names()
SIGNATURES_FILE = Path(__file__).with_name("cupy_signatures.txt")


def _load_signatures() -> dict:
    """name -> (positional names, keyword names, takes *args, takes **kwargs) from cupy_signatures.txt."""
    sigs = {}
    for line in SIGNATURES_FILE.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name, params = line[:-1].split("(", 1)
        pos, kw, star, dstar = [], set(), False, False
        for p in filter(None, (x.strip() for x in params.split(","))):
            if p == "*":
                star = True
            elif p == "**":
                dstar = True
            elif p.startswith("/"):
                pos.append(p[1:])
            elif p.startswith("="):
                kw.add(p[1:])
            else:
                pos.append(p)
                kw.add(p)
        sigs[name] = (tuple(pos), frozenset(kw), star, dstar)
    return sigs


CUPY_SIGNATURES = _load_signatures()


def _check_call(name: str, args: tuple, kwargs: dict) -> None:
    """TypeError where CuPy's function of this name would not take these arguments (NumPy's may)."""
    sig = CUPY_SIGNATURES.get(name)
    if sig is None:
        return
    pos, kw, star, dstar = sig
    if len(args) > len(pos) and not star:
        raise TypeError(f"xp.{name}() takes at most {len(pos)} positional arguments in CuPy {CUPY_VERSION}, "
                        f"{len(args)} given")
    if not dstar:
        bad = [k for k in kwargs if k not in kw]
        if bad:
            raise TypeError(f"xp.{name}() got an unexpected keyword argument {bad[0]!r}: CuPy {CUPY_VERSION}'s "
                            f"{name} takes {sorted(kw)}")


def _members(prefix: str) -> frozenset:
    """The names directly under `prefix` (e.g. "cupy.ndarray") in CuPy's list."""
    p = prefix + "."
    return frozenset(n[len(p):] for n in CUPY_NAMES if n.startswith(p) and "." not in n[len(p):])


_NDARRAY_ATTRS = _members("cupy.ndarray")
_FLAGS_ATTRS = _members("cupy.ndarray.flags")
_UFUNC_METHODS = _members("cupy.ufunc") & {"reduce", "accumulate", "outer", "at", "reduceat"}
_RANDOMSTATE_ATTRS = _members("cupy.random.RandomState")
_SCALAR_TYPES = (int, float, complex, bool, np.generic)


# ---------------------------------------------------------------------------
def _wrap(x):
    """A NumPy result as what CuPy would return: arrays (and NumPy scalars) become device arrays."""
    if isinstance(x, np.ndarray):
        return ndarray(x)
    if isinstance(x, np.generic):
        return ndarray(np.asarray(x))
    if type(x) is tuple:
        return tuple(_wrap(v) for v in x)
    if type(x) is list:
        return [_wrap(v) for v in x]
    return x


def _unwrap(x, where: str):
    """A device-function argument as NumPy sees it; host arrays refused as CuPy refuses them."""
    if isinstance(x, ndarray):
        return x._a
    if isinstance(x, np.ndarray):
        raise TypeError(f"Unsupported type {type(x)}: {where} was given a host (NumPy) array; "
                        f"a GPU kernel must copy it with xp.asarray first")
    if type(x) in (tuple, list):
        return type(x)(_unwrap(v, where) for v in x)
    return x


def _unwrap_index(x):
    """An index, an assigned value or xp.array's data: CuPy copies host arrays given here, so they pass."""
    if isinstance(x, ndarray):
        return x._a
    if type(x) in (tuple, list):
        return type(x)(_unwrap_index(v) for v in x)
    return x


# Results whose shape depends on the data: CuPy reads a count back from the device first (a sync).
_DATA_SHAPED = frozenset({"nonzero", "argwhere", "flatnonzero", "unique", "compress", "extract",
                          "ndarray.nonzero", "ndarray.compress"})


def _function(name: str, fn, check_signature: bool = False):
    data_shaped = name in _DATA_SHAPED

    @functools.wraps(fn)
    def device_function(*args, **kwargs):
        if check_signature:
            _check_call(name, args, kwargs)
        if data_shaped:
            strict_cuda.refuse(f"xp.{name}: a result shaped by the data is a read back")
            stats["syncs"] += 1
        args = _unwrap(args, f"xp.{name}")
        kwargs = {k: _unwrap(v, f"xp.{name}") for k, v in kwargs.items()}
        return _wrap(_call(fn, args, kwargs))
    return device_function


def _call(fn, args, kwargs):
    """fn(*args, **kwargs) on NumPy values; inside a graph capture also recorded (strict_cuda.record) so that the
    graph's replay computes it again into the same buffers. A NumPy scalar result becomes a 0-d array first: the
    device array it is wrapped in must be the buffer the replay writes."""
    if not strict_cuda.capturing():
        return fn(*args, **kwargs)
    out = kwargs.get("out")
    if out is not None:
        strict_cuda.keep_before_write(out if type(out) is tuple else (out,))
    raw = _as_buffers(fn(*args, **kwargs))
    given = args + tuple(kwargs.values()) + (getattr(fn, "__self__", None),)  # a method's own array too
    made = _fresh(raw, given)
    writes = made or out is not None or fn in _WRITING or getattr(fn, "__name__", "") == "at"
    strict_cuda.record(lambda: _copy_into(raw, fn(*args, **kwargs)), made,
                       getattr(fn, "__name__", "") if writes else "view")
    return raw


# operations that write an existing array (the others write only what they allocate, or are views)
_WRITING = frozenset({operator.setitem, operator.iadd, operator.isub, operator.imul, operator.itruediv,
                      operator.ifloordiv, operator.imod, operator.ipow, operator.imatmul, operator.iand, operator.ior,
                      operator.ixor, operator.ilshift, operator.irshift})


def _as_buffers(x):
    if isinstance(x, np.generic):
        return np.asarray(x)
    if type(x) in (tuple, list):
        return type(x)(_as_buffers(v) for v in x)
    return x


def _copy_into(raw, new) -> None:
    if isinstance(raw, np.ndarray):
        if raw is not new:
            np.copyto(raw, new, casting="unsafe")
    elif type(raw) in (tuple, list):
        for r, n in zip(raw, new):
            _copy_into(r, n)


def _fresh(raw, given) -> list:
    """The arrays of a result that an operation allocated (owning their memory, none of its arguments)."""
    found = raw if type(raw) in (tuple, list) else (raw,)
    return [a for a in found if isinstance(a, np.ndarray) and a.base is None
            and not any(a is g for g in given)]


def _host_to_device(name: str, fn):
    """asarray/array: the explicit host-to-device copies; device arrays pass through."""
    @functools.wraps(fn)
    def to_device(a, *args, **kwargs):
        given = a
        if isinstance(a, ndarray):
            a = a._a
        else:
            strict_cuda.refuse(f"xp.{name} of host data: a copy from the host")
            if isinstance(a, (list, tuple)):
                a = _unwrap_index(a)
            stats["to_device"] += 1
        _check_call(name, (a,) + args, kwargs)
        out = fn(a, *args, **kwargs)
        if out is a and isinstance(given, ndarray):
            if name != "array":
                return given  # CuPy hands back the very array when nothing needs converting
            out = out.copy()
        elif isinstance(out, np.ndarray) and isinstance(a, np.ndarray) and np.may_share_memory(out, a):
            out = out.copy()  # from the host: device memory of its own, as CuPy's copy to the device gives
        if strict_cuda.capturing():  # a device-to-device copy or conversion, done again by the graph's replay
            strict_cuda.record(lambda: _copy_into(out, a), _fresh(out, (a,)), name)
        return _wrap(out)
    return to_device


class _ufunc:
    """A ufunc with only the methods cupy.ufunc has."""

    def __init__(self, uf: np.ufunc):
        self._uf = uf
        self.__name__ = uf.__name__
        self.nin, self.nout, self.nargs = uf.nin, uf.nout, uf.nargs

    def __call__(self, *args, **kwargs):
        where = f"xp.{self.__name__}"
        for a in args:  # CuPy's ufuncs take device arrays and scalars only (a list is "Unsupported type")
            if type(a) in (list, tuple):
                raise TypeError(f"Unsupported type {type(a)}: {where} takes device arrays and scalars, not a "
                                f"Python sequence; build an array with xp.asarray first")
        return _wrap(_call(self._uf, _unwrap(args, where), {k: _unwrap(v, where) for k, v in kwargs.items()}))

    def __getattr__(self, name):
        if name not in _UFUNC_METHODS:
            raise AttributeError(f"cupy.ufunc has no attribute {name!r}")
        method = getattr(self._uf, name)
        where = f"xp.{self.__name__}.{name}"

        def call(*args, **kwargs):
            if name == "at":  # ufunc.at(a, indices, b): the indices may be host arrays (CuPy copies them)
                a, idx, *rest = args
                target = _unwrap(a, where)
                if strict_cuda.capturing():
                    strict_cuda.keep_before_write((target,))
                return _wrap(_call(method, (target, _unwrap_index(idx), *_unwrap(tuple(rest), where)), kwargs))
            return _wrap(_call(method, _unwrap(args, where), {k: _unwrap(v, where) for k, v in kwargs.items()}))
        return call

    def __repr__(self):
        return f"<strict_xp ufunc {self.__name__!r}>"


def _synced(x):
    strict_cuda.refuse("a value read back to the host")
    stats["syncs"] += 1
    return x


# ---------------------------------------------------------------------------
class ndarray:
    """A device array: holds a NumPy array, offers only what cupy.ndarray offers."""

    __slots__ = ("_a",)
    __array_priority__ = 100
    __hash__ = None

    def __init__(self, a):
        if not isinstance(a, np.ndarray):
            raise TypeError("strict_xp.ndarray wraps a NumPy array; use xp.asarray to make one")
        self._a = a

    # -- what every caller reads: direct, for speed
    shape = property(lambda self: self._a.shape)
    dtype = property(lambda self: self._a.dtype)
    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)
    T = property(lambda self: ndarray(self._a.T))
    device = property(lambda self: _Device())
    flags = property(lambda self: _Flags(self._a.flags))

    def __getattr__(self, name):
        if name not in _NDARRAY_ATTRS:
            raise AttributeError(f"cupy.ndarray has no attribute {name!r} (the strict stand-in offers only "
                                 f"what CuPy {CUPY_VERSION} has)")
        v = getattr(self._a, name)
        if callable(v):
            if name in ("item", "tolist", "tobytes"):
                return lambda *a, **k: _synced(v(*a, **k))
            method = _function(f"ndarray.{name}", v)
            if name in ("astype", "view", "reshape", "ravel", "squeeze", "transpose"):
                a = self._a

                def same_if_unchanged(*args, **kwargs):  # x.astype(x.dtype, copy=False) is x, as in CuPy
                    out = method(*args, **kwargs)
                    return self if isinstance(out, ndarray) and out._a is a else out
                return same_if_unchanged
            return method
        return _wrap(v)

    # -- explicit copies
    def get(self, stream=None, order="C", out=None):
        """The array's values copied to the host as NumPy."""
        strict_cuda.refuse("a copy to the host")
        stats["to_host"] += 1
        return np.array(self._a, order=order)

    def set(self, arr, stream=None):
        strict_cuda.refuse("a copy from the host")
        stats["to_device"] += 1
        self._a[...] = arr

    # -- what CuPy refuses
    def __array__(self, dtype=None, copy=None):
        raise TypeError(HOST_ONLY)

    def __array_ufunc__(self, uf, method, *inputs, **kwargs):
        dev = _UFUNCS.get(uf.__name__)
        if dev is None:
            return NotImplemented
        for x in inputs + tuple(kwargs.get("out", ())):
            if not isinstance(x, (ndarray, np.ndarray) + _SCALAR_TYPES):
                return NotImplemented
        if "out" in kwargs:
            out = kwargs["out"]
            if len(out) != 1:
                raise ValueError("The 'out' parameter must have exactly one array value")
            kwargs["out"] = out[0]
        if uf.__name__ in ("greater", "greater_equal", "less", "less_equal", "equal", "not_equal"):
            inputs = tuple(x.item() if isinstance(x, np.ndarray) and x.ndim == 0 else x for x in inputs)
        f = dev if method == "__call__" else getattr(dev, method, None)
        if f is None:
            return NotImplemented
        return f(*inputs, **kwargs)

    def __array_function__(self, func, types_, args, kwargs):
        ns = xp
        for part in func.__module__.split(".")[1:]:
            ns = getattr(ns, part, None)
            if ns is None:
                return NotImplemented
        dev = getattr(ns, func.__name__, None) if isinstance(ns, types.ModuleType) else None
        if dev is None or dev is func:
            return NotImplemented
        if not all(issubclass(t, (ndarray, np.ndarray)) for t in types_):
            return NotImplemented
        return dev(*args, **kwargs)

    # -- conversions CuPy allows (each a device sync)
    def __float__(self):
        return float(_synced(self._a))

    def __int__(self):
        return int(_synced(self._a))

    def __complex__(self):
        return complex(_synced(self._a))

    def __bool__(self):
        return bool(_synced(self._a))

    # -- container
    def __len__(self):
        if self._a.ndim == 0:
            raise TypeError("len() of unsized object")
        return len(self._a)

    def __iter__(self):
        if self._a.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(len(self._a)))  # indexing: recorded inside a graph capture

    def __getitem__(self, key):
        key = _unwrap_index(key)
        if _has_mask(key):
            strict_cuda.refuse("a boolean mask's result size is a read back")
            stats["syncs"] += 1  # a boolean mask's result size is read back from the device
        return _wrap(_call(operator.getitem, (self._a, key), {}))

    def __setitem__(self, key, value):
        a, key, value = self._a, _unwrap_index(key), _unwrap_index(value)
        if strict_cuda.capturing():
            strict_cuda.keep_before_write((a,))
        _call(operator.setitem, (a, key, value), {})

    def __repr__(self):
        return f"strict_xp.{self._a!r}"

    __str__ = __repr__

    def __copy__(self):
        return _wrap(_call(np.copy, (self._a,), {}))

    def __deepcopy__(self, memo):
        return self.__copy__()

    def __reduce__(self):
        return (_from_host, (self._a,))


def _has_mask(key) -> bool:
    keys = key if type(key) is tuple else (key,)
    return any(isinstance(k, np.ndarray) and k.dtype == np.bool_ and k.ndim > 0 for k in keys)


def _from_host(a):
    return ndarray(np.array(a))


class _Flags:
    """An array's flags as CuPy's Flags offers them: C/F contiguity and ownership, nothing of NumPy's `writeable`
    or `aligned` (a device array is always writeable)."""

    __slots__ = ("_f",)

    def __init__(self, flags):
        self._f = flags

    def __getattr__(self, name):
        if name not in _FLAGS_ATTRS:
            raise AttributeError(f"CuPy's ndarray.flags has no attribute {name!r} (it offers "
                                 f"{sorted(n for n in _FLAGS_ATTRS if not n.startswith('_'))})")
        return getattr(self._f, name)

    def __getitem__(self, key):
        if key not in ("C_CONTIGUOUS", "F_CONTIGUOUS", "OWNDATA"):
            raise KeyError(key)
        return self._f[key]


class _Device:
    id = 0

    def __repr__(self):
        return "<strict_xp Device 0>"


def _operand(x, op: str):
    if isinstance(x, ndarray):
        return x._a
    if isinstance(x, _SCALAR_TYPES):
        return x
    if isinstance(x, np.ndarray):
        raise TypeError(f"Unsupported type {type(x)}: a device array {op} a host (NumPy) array; "
                        f"copy it with xp.asarray first")
    return NotImplemented


def _binary(fn, op: str, reflected=False):
    def method(self, other):
        o = _operand(other, op)
        if o is NotImplemented:
            return NotImplemented
        return _wrap(_call(fn, (o, self._a) if reflected else (self._a, o), {}))
    return method


def _inplace(fn, op: str):
    def method(self, other):
        o = _operand(other, op)
        if o is NotImplemented:
            return NotImplemented
        if strict_cuda.capturing():
            strict_cuda.keep_before_write((self._a,))
        _call(fn, (self._a, o), {})
        return self
    return method


_BINARY = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "truediv": operator.truediv,
           "floordiv": operator.floordiv, "mod": operator.mod, "pow": operator.pow, "matmul": operator.matmul,
           "and": operator.and_, "or": operator.or_, "xor": operator.xor, "lshift": operator.lshift,
           "rshift": operator.rshift, "divmod": divmod}
for _n, _f in _BINARY.items():
    setattr(ndarray, f"__{_n}__", _binary(_f, _n))
    setattr(ndarray, f"__r{_n}__", _binary(_f, _n, reflected=True))
    if _n != "divmod":
        setattr(ndarray, f"__i{_n}__", _inplace(getattr(operator, f"i{_n}"), _n))
for _n, _f in {"eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le,
               "gt": operator.gt, "ge": operator.ge}.items():
    setattr(ndarray, f"__{_n}__", _binary(_f, _n))
for _n, _f in {"neg": operator.neg, "pos": operator.pos, "abs": operator.abs, "invert": operator.invert}.items():
    setattr(ndarray, f"__{_n}__", (lambda f: lambda self: _wrap(_call(f, (self._a,), {})))(_f))


# ---------------------------------------------------------------------------
class RandomState:
    """cupy.random.RandomState's methods over NumPy's generator; CuPy's `dtype=` keyword is honoured."""

    def __init__(self, seed=None, method=None):
        self._rs = np.random.RandomState(None if seed is None else int(seed) % (2 ** 32))

    def seed(self, seed=None):
        self._rs.seed(None if seed is None else int(seed) % (2 ** 32))

    def __getattr__(self, name):
        if name not in _RANDOMSTATE_ATTRS or name.startswith("_"):
            raise AttributeError(f"cupy.random.RandomState has no attribute {name!r}")
        fn = getattr(self._rs, name)

        def draw(*args, dtype=None, **kwargs):
            strict_cuda.refuse("a random draw: a graph's replay would draw the same numbers again")
            out = fn(*_unwrap(args, f"RandomState.{name}"), **kwargs)
            if dtype is not None:
                out = np.asarray(out).astype(dtype, copy=False)
            return _wrap(out)
        return draw


def asnumpy(a, stream=None, order="C", out=None):
    """CuPy's explicit device-to-host copy (host values pass through)."""
    if isinstance(a, ndarray):
        return a.get(order=order)
    return np.asarray(a, order=order)


def get_array_module(*args):
    return xp


_CONSTRUCTORS = {"asarray", "array", "asanyarray", "ascontiguousarray"}
_OWN = {"ndarray": ndarray, "asnumpy": asnumpy, "get_array_module": get_array_module}


def _refused_in_capture(fn, what: str):
    @functools.wraps(fn)
    def refused(*args, **kwargs):
        strict_cuda.refuse(what)
        return fn(*args, **kwargs)
    return refused


def _build(prefix: str, np_module, name: str) -> types.ModuleType:
    ns = types.ModuleType(name, f"strict stand-in for {prefix} (the names CuPy {CUPY_VERSION} and NumPy share)")
    for attr in _members(prefix):
        if prefix == "cupy" and attr in _OWN:
            setattr(ns, attr, _OWN[attr])
            continue
        if prefix == "cupy.random" and attr == "RandomState":
            ns.RandomState = RandomState
            continue
        if not hasattr(np_module, attr):
            continue  # CuPy-only (cuda, ElementwiseKernel, fuse, ...): a NumPy-backed module cannot offer it
        v = getattr(np_module, attr)
        if isinstance(v, np.ufunc):
            v = _UFUNCS.setdefault(attr, _ufunc(v))
        elif isinstance(v, types.ModuleType):
            continue  # submodules are built below
        elif isinstance(v, type) or not callable(v):
            pass  # dtypes, exceptions, constants: CuPy re-exports NumPy's
        elif attr in _CONSTRUCTORS:
            v = _host_to_device(attr, v)
        elif prefix == "cupy.random":
            v = _refused_in_capture(_function(attr, v), "a random draw: a graph's replay would draw the same again")
        else:
            v = _function(attr, v, check_signature=prefix == "cupy")
        setattr(ns, attr, v)
    return ns


_UFUNCS: dict[str, _ufunc] = {}
xp = _build("cupy", np, "kernelcore.testing.strict_xp.xp")
for _sub in ("random", "linalg", "fft"):
    if _sub in _members("cupy"):
        setattr(xp, _sub, _build(f"cupy.{_sub}", getattr(np, _sub), f"{xp.__name__}.{_sub}"))
# CuPy's user kernels and streams, which NumPy has no counterpart of (strict_cuda.py)
xp.ElementwiseKernel, xp.ReductionKernel, xp.RawKernel = (strict_cuda.ElementwiseKernel, strict_cuda.ReductionKernel,
                                                          strict_cuda.RawKernel)
xp.cuda = strict_cuda.cuda_module()
if "lib" in _members("cupy"):  # cupy.lib.stride_tricks: as_strided, sliding_window_view (im2col)
    xp.lib = types.ModuleType(f"{xp.__name__}.lib", "strict stand-in for cupy.lib")
    xp.lib.stride_tricks = _build("cupy.lib.stride_tricks", np.lib.stride_tricks, f"{xp.__name__}.lib.stride_tricks")


def is_device_array(value) -> bool:
    return isinstance(value, ndarray)


def buffer_of(value: ndarray) -> np.ndarray:
    """The NumPy array a stand-in device array holds: what strict_cuda's kernel twins run on."""
    return value._a


strict_cuda.use_arrays(ndarray, xp.empty, buffer_of)
