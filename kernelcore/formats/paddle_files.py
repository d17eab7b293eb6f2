"""Reading and writing programs and parameters in Paddle's file formats.

* A program file (`.pdmodel`, Paddle 1.x's `__model__`, or ours) is one serialized ProgramDesc.
* A parameter file (`.pdiparams`, `__params__`) is Paddle's combined `save_combine` stream: the
  tensors one after another with no header, no names and no count. Which tensor is which comes
  from the program: its persistable variables (minus feed/fetch/reader/raw ones) sorted by name
  with Python's sorted(), as `paddle.static.save_inference_model` writes them. Each tensor,
  little-endian (tests/paddle_oracle/NOTES.md has the measured layout):
      u32 LoD-tensor version (0) | u64 LoD levels L | L x (u64 nbytes, nbytes/8 x u64 offsets)
      u32 tensor version (0) | i32 size s | s bytes VarType.TensorDesc | numel*itemsize bytes of data
* An inference model is `<prefix>.pdmodel` + `<prefix>.pdiparams`; the program's feed/fetch ops
  name its inputs and outputs (by their `col`).

Whatever a file holds, a reader either returns a well-formed value or raises LoadError naming
the file and what is wrong with it; sizes read from a file are checked against the bytes that
are left before anything is allocated, so a corrupt length cannot ask for terabytes.
"""
from __future__ import annotations

import collections
import io as _stdio
import math
import os
import struct
from pathlib import Path
from typing import BinaryIO, Iterable, Mapping

import numpy as np
from google.protobuf.message import DecodeError

from ..ir import dtypes
from ..errors import KernelcoreError, LoadError, ScopeError
from .pir_json import is_pir_json, load_pir_program
from ..runtime.place import to_host
from ..ir.program import Program, program_from_bytes
from ..ir.proto import framework_pb2 as pb
from ..ir.registry import feed_fetch_col
from ..runtime.scope import Scope

VT = pb.VarType
# Variable types that hold no tensor to save (Paddle's is_persistable + the RAW filter of save_combine).
NOT_SAVED = frozenset({VT.FEED_MINIBATCH, VT.FETCH_LIST, VT.READER, VT.RAW})
# protobuf refuses messages of 2 GiB or more; reading such a file would only waste memory.
MAX_PROGRAM_BYTES = 2 ** 31 - 1
MAX_NDIM = 64  # NumPy's limit
MAX_ARRAY_BYTES = np.iinfo(np.intp).max  # NumPy refuses a shape whose size in bytes passes this


# ---------------------------------------------------------------------------
# programs
def load_program(path) -> Program:
    """Read a program file: a serialized ProgramDesc (`.pdmodel`, `__model__`, or what save_program wrote) or
    Paddle 3's PIR `.json`, told apart by content.

    A directory is read as Paddle 1.x's layout (`<dir>/__model__`); a path that does not exist
    but `<path>.pdmodel` (or `<path>.json`) does is read as that prefix.
    """
    path = _model_path(Path(path))
    if _is_pir_file(path):
        return load_pir_program(path)
    data = _read_file(path, "program", limit=MAX_PROGRAM_BYTES)
    return program_from_bytes(data, source=str(path))


def _is_pir_file(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            return is_pir_json(f.read(4096))
    except OSError:
        return False  # reading it for real says why


def save_program(program: Program, path) -> None:
    """Write `program` as a serialized ProgramDesc (what Paddle reads as `.pdmodel`)."""
    if not isinstance(program, Program):
        raise TypeError(f"save_program takes a Program, got {type(program).__name__}")
    _write_file(Path(path), program.to_bytes())


def _model_path(path: Path) -> Path:
    if path.is_dir():
        return path / "__model__"
    if not path.exists() and path.suffix not in (".pdmodel", ".json"):
        for suffix in (".pdmodel", ".json"):
            if Path(str(path) + suffix).exists():
                return Path(str(path) + suffix)
    return path


# ---------------------------------------------------------------------------
# parameter streams
def persistable_names(program: Program) -> list[str]:
    """The names a `.pdiparams` file of `program` holds, in file order: its persistable
    variables (all blocks, except feed/fetch/reader/raw ones), each once, sorted()."""
    names = set()
    for b in program.desc.blocks:
        for v in b.vars:
            if v.persistable and v.type.type not in NOT_SAVED:
                names.add(v.name)
    return sorted(names)


def load_params(path, names, *, sort: bool = True) -> dict[str, np.ndarray]:
    """Read a combined parameter file: {name: array}.

    `names` is the list of parameter names, or a Program (its persistable_names; the arrays'
    dtypes and shapes are then checked against its declarations). The file holds the tensors
    in sorted(names) order, as Paddle writes them; with sort=False, in the order given.
    """
    path = Path(path)
    program = names if isinstance(names, Program) else None
    order = _order(persistable_names(program) if program is not None else names, sort)
    try:
        f = open(path, "rb")
    except OSError as e:
        raise LoadError(f"{path}: cannot read the parameter file ({e.strerror or e})") from None
    with f:
        try:
            size = os.fstat(f.fileno()).st_size
        except OSError as e:
            raise LoadError(f"{path}: cannot read the parameter file ({e.strerror or e})") from None
        out = _read_params(f, size, order, str(path))
    if program is not None:
        check_params_match(program, out, str(path))
    return out


def params_from_bytes(data: bytes, names, *, sort: bool = True, source: str = "bytes") -> dict[str, np.ndarray]:
    """load_params for bytes in memory."""
    program = names if isinstance(names, Program) else None
    order = _order(persistable_names(program) if program is not None else names, sort)
    data = bytes(data)
    out = _read_params(_stdio.BytesIO(data), len(data), order, source)
    if program is not None:
        check_params_match(program, out, source)
    return out


def save_params(path, arrays: Mapping[str, object], *, sort: bool = True) -> None:
    """Write {name: array} as a combined parameter file (sorted by name unless sort=False)."""
    _write_file(Path(path), params_to_bytes(arrays, sort=sort))


def params_to_bytes(arrays: Mapping[str, object], *, sort: bool = True) -> bytes:
    if not isinstance(arrays, Mapping):
        raise TypeError(f"save_params takes a mapping of name -> array, got {type(arrays).__name__}")
    names = _order(list(arrays), sort)
    return b"".join(tensor_to_bytes(arrays[n], name=n) for n in names)


def tensor_to_bytes(value, lod: Iterable[Iterable[int]] = (), *, name: str = "tensor") -> bytes:
    """One tensor in the save_combine layout (what Paddle's `save` op writes for one variable)."""
    arr = np.asarray(to_host(value))
    try:
        data_type = dtypes.from_numpy(arr.dtype)
    except TypeError:
        raise TypeError(f"{name}: cannot save dtype {arr.dtype}; a parameter file holds "
                        f"bool, (u)int8/16/32/64, float16/32/64 and complex64/128 tensors") from None
    desc = VT.TensorDesc(data_type=data_type, dims=list(arr.shape))
    desc_bytes = desc.SerializeToString(deterministic=True)  # proto2: dims unpacked, as Paddle writes
    lod = [[int(x) for x in level] for level in lod]
    parts = [struct.pack("<IQ", 0, len(lod))]
    for level in lod:
        parts.append(struct.pack("<Q", 8 * len(level)))
        parts.append(np.asarray(level, dtype="<u8").tobytes())
    parts.append(struct.pack("<Ii", 0, len(desc_bytes)))
    parts.append(desc_bytes)
    parts.append(np.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder("<")).tobytes())
    return b"".join(parts)


def read_tensors(data: bytes, source: str = "bytes") -> list[tuple[np.ndarray, list[list[int]]]]:
    """Every tensor of a save_combine stream as (array, lod), without naming them."""
    data = bytes(data)
    f = _Stream(_stdio.BytesIO(data), len(data), source)
    out = []
    while f.remaining:
        out.append(_read_tensor(f, f"tensor #{len(out)}"))
    return out


def _order(names, sort: bool) -> list[str]:
    if isinstance(names, str) or not isinstance(names, Iterable):
        raise TypeError(f"names must be a list of variable names or a Program, got {type(names).__name__}")
    names = list(names)
    for n in names:
        if not isinstance(n, str) or not n:
            raise TypeError(f"parameter names must be non-empty strings, got {n!r:.60}")
    dup = sorted(n for n, k in collections.Counter(names).items() if k > 1)
    if dup:
        raise ValueError(f"parameter names repeat: {dup}")
    return sorted(names) if sort else names


class _Stream:
    """A binary file with the number of bytes left, so every length is checked before use."""

    def __init__(self, f: BinaryIO, size: int, source: str):
        self.f, self.remaining, self.source, self.offset = f, size, source, 0

    def take(self, n: int, what: str) -> bytes:
        self._need(n, what)
        b = self.f.read(n)
        if len(b) != n:  # the file shrank under us
            raise LoadError(f"{self.source}: the file ends inside {what} (offset {self.offset})")
        self._advance(n)
        return b

    def take_into(self, buf: bytearray, what: str) -> None:
        n = len(buf)
        self._need(n, what)
        got = self.f.readinto(buf) if n else 0
        if got != n:
            raise LoadError(f"{self.source}: the file ends inside {what} (offset {self.offset})")
        self._advance(n)

    def _need(self, n: int, what: str) -> None:
        if n > self.remaining:
            raise LoadError(f"{self.source}: {what} needs {n} bytes at offset {self.offset}, but only "
                            f"{self.remaining} are left (truncated or corrupt file)")

    def _advance(self, n: int) -> None:
        self.offset += n
        self.remaining -= n


def _read_params(f: BinaryIO, size: int, names: list[str], source: str) -> dict[str, np.ndarray]:
    s = _Stream(f, size, source)
    out: dict[str, np.ndarray] = {}
    for i, name in enumerate(names):
        if not s.remaining:
            raise LoadError(f"{source}: the file holds {i} tensor(s) but {len(names)} were expected "
                            f"({', '.join(names[i:i + 5])}{', ...' if len(names) - i > 5 else ''} missing)")
        out[name] = _read_tensor(s, f"tensor #{i} ({name})")[0]
    if s.remaining:
        raise LoadError(f"{source}: {s.remaining} bytes are left after the {len(names)} expected tensor(s) "
                        f"(offset {s.offset}): the file holds more tensors than the program's persistables, "
                        f"or is corrupt")
    return out


def _read_tensor(s: _Stream, what: str) -> tuple[np.ndarray, list[list[int]]]:
    src = s.source
    start = s.offset
    version, = struct.unpack("<I", s.take(4, f"{what}: LoD-tensor version"))
    if version != 0:
        raise LoadError(f"{src}: {what} at offset {start}: LoD-tensor version {version}, expected 0 "
                        f"(not a Paddle parameter stream, or misaligned)")
    levels, = struct.unpack("<Q", s.take(8, f"{what}: LoD level count"))
    s._need(8 * levels, f"{what}: {levels} LoD levels")  # each level takes >= 8 bytes
    lod = []
    for k in range(levels):
        nbytes, = struct.unpack("<Q", s.take(8, f"{what}: LoD level {k} size"))
        if nbytes % 8:
            raise LoadError(f"{src}: {what}: LoD level {k} is {nbytes} bytes, not a multiple of 8")
        lod.append(np.frombuffer(s.take(nbytes, f"{what}: LoD level {k}"), "<u8").tolist())
    tversion, = struct.unpack("<I", s.take(4, f"{what}: tensor version"))
    if tversion != 0:
        raise LoadError(f"{src}: {what}: tensor version {tversion}, expected 0")
    desc_size, = struct.unpack("<i", s.take(4, f"{what}: TensorDesc size"))
    if desc_size < 0:
        raise LoadError(f"{src}: {what}: negative TensorDesc size {desc_size}")
    raw = s.take(desc_size, f"{what}: TensorDesc")
    desc = VT.TensorDesc()
    try:
        desc.ParseFromString(raw)
    except (DecodeError, RuntimeError, ValueError) as e:
        raise LoadError(f"{src}: {what}: the TensorDesc does not parse ({e})") from None
    if not desc.HasField("data_type"):
        raise LoadError(f"{src}: {what}: the TensorDesc has no data type, or one this version of the "
                        f"format does not define")
    try:
        dtype = dtypes.to_numpy(desc.data_type)
    except TypeError:
        raise LoadError(f"{src}: {what}: data type {dtypes.type_name(desc.data_type)} is not one a parameter "
                        f"file can hold here (no NumPy equivalent)") from None
    dims = list(desc.dims)
    _check_dims(dims, dtype.itemsize, f"{src}: {what}: {dtypes.type_name(desc.data_type)}{dims}")
    nbytes = math.prod(dims) * dtype.itemsize
    s._need(nbytes, f"{what}: data of {dtypes.type_name(desc.data_type)}{dims}")  # before allocating
    buf = bytearray(nbytes)
    s.take_into(buf, f"{what}: data")
    arr = np.frombuffer(buf, dtype.newbyteorder("<")).reshape(dims)
    if not arr.dtype.isnative:
        arr = arr.astype(dtype)
    return arr, lod


def _check_dims(dims: list[int], itemsize: int, what: str) -> None:
    """LoadError unless `dims` is a shape NumPy can hold: at most MAX_NDIM dimensions, none negative, and
    the size of the array (its non-zero dims times `itemsize`: NumPy checks that product even when a dim is
    0) within int64. A file's data bytes are checked against what is left of it after this."""
    if len(dims) > MAX_NDIM:
        raise LoadError(f"{what}: {len(dims)} dimensions (at most {MAX_NDIM})")
    if any(d < 0 for d in dims):
        raise LoadError(f"{what}: negative dimension in its shape")
    size = itemsize
    for d in dims:
        size *= max(d, 1)
        if size > MAX_ARRAY_BYTES:
            raise LoadError(f"{what}: the shape's size overflows int64 (more than {MAX_ARRAY_BYTES} bytes)")


def check_params_match(program: Program, params: Mapping[str, np.ndarray], source: str) -> None:
    """LoadError when a loaded tensor's dtype, or a fully known declared shape, differs from
    the program's declaration: the parameter file belongs to another program."""
    decls = {}
    for b in program.blocks:
        for v in b.vars:
            decls.setdefault(v.name, v)
    for name, arr in params.items():
        v = decls.get(name)
        if v is None or v.dtype is None:
            continue
        want = v.dtype
        try:
            want_np = dtypes.to_numpy(want)
        except TypeError:
            continue
        if arr.dtype != want_np:
            raise LoadError(f"{source}: {name!r} is {arr.dtype}{list(arr.shape)} but the program declares "
                            f"{dtypes.type_name(want)}{list(v.shape or ())}: the parameter file does not "
                            f"belong to this program")
        shape = v.shape
        if shape is not None and all(d >= 0 for d in shape) and tuple(shape) != arr.shape:
            raise LoadError(f"{source}: {name!r} has shape {list(arr.shape)} but the program declares "
                            f"{list(shape)}: the parameter file does not belong to this program")


# ---------------------------------------------------------------------------
# inference models
def feed_target_names(program: Program, *, strict: bool = True) -> list[str]:
    """The variables the program's feed ops fill, in `col` order."""
    return _io_names(program, "feed", "Out", strict)


def fetch_target_names(program: Program, *, strict: bool = True) -> list[str]:
    """The variables the program's fetch ops read, in `col` order."""
    return _io_names(program, "fetch", "X", strict)


def _io_names(program: Program, op_type: str, slot: str, strict: bool) -> list[str]:
    by_col: dict[int, str] = {}
    for k, op in enumerate(program.global_block().desc.ops):
        if op.type != op_type:
            continue
        names = next((list(v.arguments) for v in (op.outputs if slot == "Out" else op.inputs)
                      if v.parameter == slot), [])
        try:
            col = feed_fetch_col(op)
        except KernelcoreError as e:
            col, bad_col = None, str(e)
        problem = (f"names {len(names)} variables in {slot}" if len(names) != 1 else
                   f"has a col it cannot use: {bad_col}" if col is None else
                   f"has col {col}, which another {op_type} op has" if col in by_col else
                   f"has a negative col {col}" if col < 0 else None)
        if problem:
            if strict:
                raise LoadError(f"{op_type} op #{k} of block 0 {problem}")
            continue
        by_col[col] = names[0]
    cols = sorted(by_col)
    if strict and cols != list(range(len(cols))):
        raise LoadError(f"the {op_type} ops' cols are {cols}; expected 0..{len(cols) - 1}")
    return [by_col[c] for c in cols]


def load_inference_model(prefix_or_path, *, scope: Scope | None = None, place=None):
    """Read an inference model: (program, scope, feed_names, fetch_names).

    Accepts `<prefix>` (reads `<prefix>.pdmodel` + `<prefix>.pdiparams`), either file's path, or
    a Paddle 1.x directory (`__model__` plus `__params__` or one file per parameter). The
    parameters go into `scope` (a new Scope by default), on `place` (the host by default; give the
    executor's place to run on a GPU: device kernels do not take host arrays).
    """
    model, params, per_var_dir = _inference_paths(Path(prefix_or_path))
    program = load_program(model)
    names = persistable_names(program)
    try:
        feeds, fetches = feed_target_names(program), fetch_target_names(program)
    except LoadError as e:
        raise LoadError(f"{model}: {e}") from None
    scope = scope if scope is not None else Scope()
    if names:
        if per_var_dir is not None:
            values = {}
            for n in names:
                p = per_var_dir / n
                if not p.is_file():
                    raise LoadError(f"{per_var_dir}: no __params__ file and no file for parameter {n!r}")
                values[n] = load_params(p, [n])[n]
            check_params_match(program, values, str(per_var_dir))
        else:
            if not params.is_file():
                raise LoadError(f"{params}: no parameter file, but {model} has {len(names)} persistable "
                                f"variable(s) ({', '.join(names[:5])}{', ...' if len(names) > 5 else ''})")
            values = load_params(params, program)
        on_device = place is not None and place.kind != "cpu"
        for n, arr in values.items():
            scope.set(n, place.xp.asarray(arr) if on_device else arr)
    return program, scope, feeds, fetches


def _inference_paths(p: Path):
    if p.name == "__model__" and p.is_file():
        p = p.parent
    if p.is_dir():
        model = p / "__model__"
        if not model.is_file():
            raise LoadError(f"{p}: a directory, but it holds no __model__ file")
        params = p / "__params__"
        return model, params, (None if params.is_file() else p)
    s = str(p)
    for suffix in (".pdmodel", ".pdiparams", ".json"):
        if s.endswith(suffix):
            s = s[: -len(suffix)]
            break
    model, params = Path(s + ".pdmodel"), Path(s + ".pdiparams")
    if not model.is_file() and Path(s + ".json").is_file():
        model = Path(s + ".json")  # Paddle 3's default: a PIR program
    if not model.is_file():
        if p.is_file() and p.suffix not in (".pdmodel", ".pdiparams", ".json"):
            # a program file by another name (model.pb): its parameters, if any, in model.pdiparams
            return p, p.with_suffix(".pdiparams"), None
        raise LoadError(f"{model}: no such model file (looked for <prefix>.pdmodel and <prefix>.json "
                        f"with prefix {s!r})")
    return model, params, None


def save_inference_model(prefix, program: Program, scope: Scope, *, feed_names=None, fetch_names=None) -> tuple[Path, Path]:
    """Write `<prefix>.pdmodel` and `<prefix>.pdiparams` (the program's persistables from `scope`).

    A program without feed/fetch ops gets them when `feed_names` / `fetch_names` are given (in a
    copy), so Paddle's load_inference_model finds its inputs and outputs. Returns both paths.
    """
    if not isinstance(program, Program):
        raise TypeError(f"save_inference_model takes a Program, got {type(program).__name__}")
    if feed_names is not None or fetch_names is not None:
        program = with_feed_fetch(program, feed_names or [], fetch_names or [])
    values = {}
    for n in persistable_names(program):
        v = scope.find_var(n)
        if v is None or v.value is None:
            raise ScopeError(f"cannot save the inference model: the scope holds no value for the "
                             f"persistable variable {n!r}")
        values[n] = v.value
    s = str(prefix)
    model, params = Path(s + ".pdmodel"), Path(s + ".pdiparams")
    model.parent.mkdir(parents=True, exist_ok=True)
    save_program(program, model)
    save_params(params, values)
    return model, params


def with_feed_fetch(program: Program, feed_names, fetch_names) -> Program:
    """A copy of `program` with feed ops for `feed_names` prepended and fetch ops for
    `fetch_names` appended (and the `feed`/`fetch` holder variables), as Paddle saves them."""
    from ..errors import ProgramError
    prog = program.clone()
    block = prog.global_block()
    have_feed, have_fetch = feed_target_names(prog, strict=False), fetch_target_names(prog, strict=False)
    if (feed_names and have_feed) or (fetch_names and have_fetch):
        raise ProgramError("the program already has feed/fetch ops; pass feed_names/fetch_names only for "
                           "a program without them")
    for n in list(feed_names) + list(fetch_names):
        if block.find_var_recursive(n) is None:
            raise ProgramError(f"block 0 declares no variable {n!r} to feed or fetch")
    if feed_names and not block.has_var("feed"):
        block.create_var("feed", type=VT.FEED_MINIBATCH, persistable=True, dtype=None)
    if fetch_names and not block.has_var("fetch"):
        block.create_var("fetch", type=VT.FETCH_LIST, persistable=True, dtype=None)
    for col, n in reversed(list(enumerate(feed_names))):
        block.prepend_op("feed", inputs={"X": ["feed"]}, outputs={"Out": [n]}, attrs={"col": col}, infer=False)
    for col, n in enumerate(fetch_names):
        block.append_op("fetch", inputs={"X": [n]}, outputs={"Out": ["fetch"]}, attrs={"col": col}, infer=False)
    return prog


# ---------------------------------------------------------------------------
def _read_file(path: Path, what: str, limit: int | None = None) -> bytes:
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if limit is not None and size > limit:
                raise LoadError(f"{path}: {size} bytes; a {what} file is at most {limit} bytes "
                                f"(protobuf's limit), so this is not one")
            return f.read()
    except IsADirectoryError:
        raise LoadError(f"{path}: is a directory, not a {what} file") from None
    except OSError as e:
        raise LoadError(f"{path}: cannot read the {what} file ({e.strerror or e})") from None


def _write_file(path: Path, data: bytes) -> None:
    """Write through a temporary file, so a failed write leaves no half file under the name."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            tmp.unlink()
        except OSError:
            pass
        raise
