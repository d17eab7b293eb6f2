"""The pieces of a PIR program as the reader holds them (values, the legacy ops it will write, sub-block references)
and the parsers of PIR's JSON fields (value ids, tensor types, attributes), each checking what it reads: a field
that is not what PIR writes goes to `reader.fail`, which raises LoadError naming the place.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..ir.proto import framework_pb2 as pb

DIALECTS = {"0": "builtin", "1": "pd_op", "2": "cf"}

# element types of PIR's dense tensors ("0.t_f32") -> kernelcore dtype names
DTYPES = {"t_f16": "float16", "t_bf16": "bfloat16", "t_f32": "float32", "t_f64": "float64", "t_i8": "int8",
          "t_ui8": "uint8", "t_i16": "int16", "t_i32": "int32", "t_i64": "int64", "t_bool": "bool",
          "t_c64": "complex64", "t_c128": "complex128"}


class Dtype(str):
    """A PIR dtype attribute's value ("float32"): legacy ops take it as a VarType number."""


@dataclass
class Value:
    name: str | list[str]            # a variable, or a list of them (builtin.combine's vectors)
    shape: list[int] | None = None
    dtype: str | None = None
    const: object = None             # the value of a constant maker (full / full_int_array), else None
    maker: int | None = None         # index of the emitted op that writes it, or None
    parts: list = field(default_factory=list)  # a combine's element values
    unused: bool = False             # a result kernelcore's op does not give (a batch norm's reserve space)
    pending: tuple | None = None     # a vector result: (emitted op index, its slot, name stem) for builtin.split


@dataclass
class Emit:
    type: str
    inputs: dict
    outputs: dict
    attrs: dict
    pir_index: int
    keep: bool = True
    block: int = 0


@dataclass(frozen=True)
class BlockRef:
    """A `sub_block` attribute before the Program's blocks exist."""
    idx: int


def create_var(block, name: str, shape, dtype) -> None:
    if shape == "scopes":
        block.create_var(name, type=pb.VarType.STEP_SCOPES, dtype=None)
    elif shape == "array":
        block.create_var(name, type=pb.VarType.LOD_TENSOR_ARRAY, dtype=dtype or "float32")
    else:
        block.create_var(name, shape=shape, dtype=dtype or "float32")


# -- small parsers ----------------------------------------------------------------------------------------------
VT_NAMES = {"float16": "FP16", "bfloat16": "BF16", "float32": "FP32", "float64": "FP64", "int8": "INT8",
            "uint8": "UINT8", "int16": "INT16", "int32": "INT32", "int64": "INT64", "bool": "BOOL",
            "complex64": "COMPLEX64", "complex128": "COMPLEX128"}


def get_field(obj, key: str, kind, reader):
    v = obj.get(key) if isinstance(obj, dict) else None
    if not isinstance(v, kind):
        reader.fail(f"expected {key!r} to be a {kind.__name__}")
    return v


def first_result(x, reader):
    if isinstance(x, list):
        if not x:
            reader.fail("an op without results")
        return x[0]
    return x


def op_name(kind: str) -> str:
    dialect, dot, rest = kind.partition(".")
    if dot and dialect in DIALECTS:
        return f"{DIALECTS[dialect]}.{rest}"
    return kind


def value_id(v, reader) -> int:
    if not isinstance(v, dict):
        reader.fail(f"expected a value reference object, got {type(v).__name__}")
    vid = v.get("%", v.get("#"))
    if not isinstance(vid, int) or isinstance(vid, bool) or abs(vid) > 1 << 40:
        reader.fail(f"a value id must be an integer, got {str(vid)[:40]!r}")
    return vid


def tensor_type(tt, reader):
    """(shape, dtype name, is a list) of a result's type; shape and dtype None where kernelcore does not model
    the type."""
    if not isinstance(tt, dict):
        return None, None, False
    kind = str(tt.get("#", ""))
    if kind.endswith("t_vec"):
        return None, None, True
    if not kind.endswith("t_dtensor"):
        return None, None, False
    d = tt.get("D")
    if not isinstance(d, list) or len(d) < 2 or not isinstance(d[0], dict):
        reader.fail("a dense tensor type must be [element type, dims, ...]")
    elem = str(d[0].get("#", "")).partition(".")[2]
    dims = d[1]
    if not isinstance(dims, list) or len(dims) > 64 or not all(
            isinstance(x, int) and not isinstance(x, bool) and -1 <= x < 1 << 40 for x in dims):
        reader.fail(f"a tensor's dims must be at most 64 integers >= -1, got {str(dims)[:60]}")
    return list(dims), DTYPES.get(elem), False


def attr_value(at, reader):
    if not isinstance(at, dict):
        reader.fail("an attribute value must be an object")
    kind = str(at.get("#", "")).partition(".")[2]
    d = at.get("D")
    if kind == "a_array":
        if not isinstance(d, list):
            reader.fail("an array attribute must hold a list")
        return [attr_value(x, reader) for x in d]
    if kind in ("a_bool",):
        if not isinstance(d, bool):
            reader.fail(f"a bool attribute holds {str(d)[:20]!r}")
        return d
    if kind in ("a_i32", "a_i64", "a_index"):
        if not isinstance(d, int) or isinstance(d, bool):
            reader.fail(f"an integer attribute holds {str(d)[:20]!r}")
        return d
    if kind in ("a_f32", "a_f64"):
        if d is None and "VD" in at:  # JSON has no infinity or NaN: Paddle writes them as "INF", "-INF", "NaN"
            return _special_float(at["VD"], reader)
        if not isinstance(d, (int, float)) or isinstance(d, bool):
            reader.fail(f"a float attribute holds {str(d)[:20]!r}")
        return float(d)
    if kind == "a_intarray":
        if not isinstance(d, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in d):
            reader.fail("an int array attribute must hold integers")
        return d
    if kind in ("a_str", "a_dtype"):
        if not isinstance(d, str):
            reader.fail(f"a string attribute holds {type(d).__name__}")
        return Dtype(d) if kind == "a_dtype" else d
    if kind == "a_scalar":  # a typed scalar: [type, value] or the value
        return d[1] if isinstance(d, list) and len(d) == 2 else d
    return d  # place, data layout and others kernelcore does not read


_SPECIAL_FLOATS = {"inf": float("inf"), "-inf": float("-inf"), "nan": float("nan")}


def _special_float(text, reader) -> float:
    value = _SPECIAL_FLOATS.get(text.lower()) if isinstance(text, str) else None
    if value is None:
        reader.fail(f"a float attribute holds {str(text)[:20]!r} (Paddle writes INF, -INF or NaN there)")
    return value


def attrs_of(op, reader) -> dict:
    a = op.get("A", [])
    if not isinstance(a, list):
        reader.fail("'A' (attributes) must be a list")
    out = {}
    for item in a:
        if not isinstance(item, dict) or not isinstance(item.get("N"), str):
            reader.fail("an attribute must be {'N': name, 'AT': value}")
        out[item["N"]] = attr_value(item.get("AT"), reader)
    return out


def dtype_attr(name):
    return name if isinstance(name, str) and name in VT_NAMES else None


def var_type(dtype_name: str) -> int:
    return getattr(pb.VarType, VT_NAMES.get(dtype_name, "FP32"))


def legacy_attr_value(value):
    if isinstance(value, Dtype):
        if value not in VT_NAMES:
            return -1  # "Undefined(ALL_DTYPE)": keep the input's dtype, as legacy ops say with -1
        return var_type(value)
    return value


_INT_TYPES = (pb.AttrType.INT, pb.AttrType.LONG)
_INTS_TYPES = (pb.AttrType.INTS, pb.AttrType.LONGS)
_FLOAT_TYPES = (pb.AttrType.FLOAT, pb.AttrType.FLOAT64)


def _number(x, kind):
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise ValueError(f"expected a number, got {str(x)[:40]!r}")
    if kind is int and (x != x or x in (float("inf"), float("-inf"))):  # a float attribute may be infinite
        raise ValueError(f"expected an integer, got {x!r}")
    if kind is int and x != int(x):
        raise ValueError(f"expected an integer, got {x!r}")
    return kind(x)


def coerce_attr(opdef, name: str, value):
    """A folded constant in the type the legacy attribute takes (a `full` gives floats; a pool size ints).
    ValueError when it cannot be that type."""
    spec = opdef.attr_spec(name)
    if spec is None:
        return value
    t = spec.type
    if t in _INT_TYPES and isinstance(value, (int, float)) and not isinstance(value, bool):
        return _number(value, int)
    if t in _INTS_TYPES:
        items = value if isinstance(value, list) else [value]
        return [_number(x, int) for x in items]
    if t in _FLOAT_TYPES and isinstance(value, (int, float)) and not isinstance(value, bool):
        return _number(value, float)
    if t == pb.AttrType.FLOATS:
        items = value if isinstance(value, list) else [value]
        return [_number(x, float) for x in items]
    return value


def combined_const(values: list[Value]):
    if values and all(v.const is not None and not isinstance(v.const, list) for v in values):
        return [v.const for v in values]
    return None


def operand_targets(where: str):
    """'@attr|Slot|ListSlot' -> (attr or None, tensor slot or None, list slot or None)."""
    parts = where.split("|")
    attr = parts[0][1:] if parts[0].startswith("@") else None
    rest = parts[1:] if attr else parts
    tensor_slot = rest[0] if rest else None
    list_slot = rest[1] if len(rest) > 1 else None
    return attr, tensor_slot, list_slot
