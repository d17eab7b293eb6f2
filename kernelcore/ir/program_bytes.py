"""Bytes -> a checked ProgramDesc: the IR parses and validates itself (formats/ owns files and parameter
streams). Whatever the bytes, the answer is a well-formed desc or a LoadError naming what is wrong."""
from __future__ import annotations

import ctypes
import warnings

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import DecodeError

from . import op_reads
from ..errors import LoadError
from .proto import framework_pb2 as pb
from .proto.wire_twin import parse_checked
from .structure import check_structure
from .support import UnsupportedOpsWarning, describe, unsupported_ops


def parse_program_desc(data: bytes, source: str = "bytes") -> tuple[pb.ProgramDesc, list | None]:
    """Parse and check a serialized ProgramDesc: (the desc, the outline's per-op records for a big program,
    else None); LoadError unless it is a well-formed program."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise LoadError(f"{source}: expected bytes, got {type(data).__name__}")
    data = bytes(data)
    if not data:
        raise LoadError(f"{source}: the file is empty (expected a serialized ProgramDesc)")
    desc = pb.ProgramDesc()
    try:
        desc.ParseFromString(data)
    except (DecodeError, RuntimeError, ValueError) as e:
        raise LoadError(f"{source}: not a serialized ProgramDesc ({e}){_format_hint(data, source)}") from None
    if not desc.IsInitialized():
        # upb parses a message that lacks required fields (or holds an unknown enum value, which
        # proto2 drops) without complaint; everything downstream assumes they are there.
        missing = desc.FindInitializationErrors()
        shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        raise LoadError(f"{source}: not a complete ProgramDesc: required fields missing or holding "
                        f"unknown enum values: {shown}{_format_hint(data, source)}")
    twin = parse_checked(data)
    if twin is None:
        # proto2 does not check UTF-8 on parse; upb then hands back bytes where str is expected. The
        # check runs in the parser (proto/wire_twin.py); the walk that names the field only on failure.
        bad = _first_non_utf8(desc, "")
        raise LoadError(f"{source}: field {bad or '(a string field)'} is not valid UTF-8 text")
    if not desc.blocks:
        raise LoadError(f"{source}: the program has no blocks{_format_hint(data, source)}")
    big = sum(len(b.ops) for b in desc.blocks) > op_reads.LAZY_ABOVE
    check_structure(desc, source, attr_types=op_reads.attr_types(twin) if big else None)
    _check_names(desc, source)
    unsupported = unsupported_ops(desc)
    if unsupported:  # it loads (to be shown, pruned, edited) but cannot run: say so now, not mid-run
        warnings.warn(UnsupportedOpsWarning(f"{source}: {describe(unsupported)}"), stacklevel=3)
    if not big:
        return desc, None
    # a big program is shown in parts, whose outline reads every op: read them now from the twin, where
    # slots are flat (op_reads.py), rather than walk the desc's wrappers at the first display
    reads = op_reads.read_program(twin, desc)
    del twin
    _return_freed_heap()
    return desc, reads


def _return_freed_heap() -> None:
    """Hand the pages of the freed twin parse back to the system: glibc keeps free pages that lie below
    objects made later (the records) unless asked, ~170 MB of resident memory for a 104 MB file. Elsewhere
    (no glibc) the memory stays the process's, to reuse."""
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError, TypeError):  # no C library to open by None (Windows), no malloc_trim
        pass


def _format_hint(data: bytes, source: str) -> str:
    head = data[:4096].lstrip()
    if head.startswith(b"{"):
        if b'"magic"' in head and b'"pir"' in head:
            return ("; it is a Paddle 3 PIR program (.json): kc.load_program and kc.load_inference_model read "
                    "both formats")
        return "; it looks like JSON, but not a Paddle 3 PIR program (it names no \"magic\": \"pir\")"
    if source.endswith((".pdiparams", "__params__")):
        return "; this looks like a parameter file: programs are the .pdmodel files"
    return ""


def _first_non_utf8(msg, where: str) -> str | None:
    """The path of the first string field that did not decode as UTF-8, else None."""
    for fd, value in msg.ListFields():
        name = f"{where}.{fd.name}" if where else fd.name
        if fd.type == FieldDescriptor.TYPE_STRING:
            values = value if _is_repeated(fd) else (value,)
            for i, v in enumerate(values):
                if type(v) is not str:
                    return f"{name}[{i}]" if _is_repeated(fd) else name
        elif fd.type == FieldDescriptor.TYPE_MESSAGE:
            if _is_repeated(fd):
                for i, m in enumerate(value):
                    bad = _first_non_utf8(m, f"{name}[{i}]")
                    if bad:
                        return bad
            else:
                bad = _first_non_utf8(value, name)
                if bad:
                    return bad
    return None


def _is_repeated(fd) -> bool:
    rep = getattr(fd, "is_repeated", None)  # protobuf >= 5.28; `label` is deprecated there
    return rep if rep is not None else fd.label == FieldDescriptor.LABEL_REPEATED


def _check_names(desc: pb.ProgramDesc, source: str) -> None:
    for b in desc.blocks:
        seen = set()
        for v in b.vars:
            if not v.name:
                raise LoadError(f"{source}: block {b.idx} declares a variable with an empty name")
            if v.name in seen:
                raise LoadError(f"{source}: block {b.idx} declares variable {v.name!r} twice")
            seen.add(v.name)
        for k, op in enumerate(b.ops):
            if not op.type:
                raise LoadError(f"{source}: op #{k} of block {b.idx} has an empty type")
