"""Attribute values: Python <-> OpDesc.Attr, with type checks that name what was given."""
from __future__ import annotations

import math
import numbers

from .proto import framework_pb2 as pb

A = pb.AttrType
INT32_MIN, INT32_MAX = -(2 ** 31), 2 ** 31 - 1
# The attribute types a program walk compares against, as plain ints: a protobuf enum's attribute lookup
# costs a Python call each time, and a walk compares once per attribute of every op (627,600 of them in a
# 51,230-op program).
T_BLOCK, T_BLOCKS, T_VAR, T_VARS = int(A.BLOCK), int(A.BLOCKS), int(A.VAR), int(A.VARS)

# AttrType -> the OpDesc.Attr field that holds it
FIELD = {
    A.INT: "i", A.FLOAT: "f", A.STRING: "s", A.INTS: "ints", A.FLOATS: "floats",
    A.STRINGS: "strings", A.BOOLEAN: "b", A.BOOLEANS: "bools", A.BLOCK: "block_idx",
    A.LONG: "l", A.BLOCKS: "blocks_idx", A.LONGS: "longs", A.FLOAT64S: "float64s",
    A.VAR: "var_name", A.VARS: "vars_name", A.FLOAT64: "float64", A.SCALAR: "scalar",
    A.SCALARS: "scalars",
}
LISTS = frozenset({A.INTS, A.FLOATS, A.STRINGS, A.BOOLEANS, A.BLOCKS, A.LONGS, A.FLOAT64S,
                   A.VARS, A.SCALARS})


def type_name(t: int) -> str:
    try:
        return A.Name(t)
    except ValueError:
        return f"<attr type {t}>"


def _is_int(v) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def _is_real(v) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def _scalar_ok(v) -> bool:
    return isinstance(v, (bool, numbers.Number))


_ELEMENT_OK = {
    A.INT: lambda v: _is_int(v) and INT32_MIN <= v <= INT32_MAX,
    A.LONG: _is_int,
    A.FLOAT: _is_real, A.FLOAT64: _is_real,
    A.STRING: lambda v: isinstance(v, str), A.VAR: lambda v: isinstance(v, str),
    A.BOOLEAN: lambda v: isinstance(v, bool),
    A.BLOCK: lambda v: _is_int(v) and v >= 0,
    A.SCALAR: _scalar_ok,
}
_ELEMENT_OF = {A.INTS: A.INT, A.FLOATS: A.FLOAT, A.STRINGS: A.STRING, A.BOOLEANS: A.BOOLEAN,
               A.BLOCKS: A.BLOCK, A.LONGS: A.LONG, A.FLOAT64S: A.FLOAT64, A.VARS: A.VAR,
               A.SCALARS: A.SCALAR}


def check_value(attr_type: int, value) -> str | None:
    """None when `value` fits `attr_type`; else a short 'expected ..., got ...' text."""
    if attr_type in _ELEMENT_OF:
        if not isinstance(value, (list, tuple)):
            return f"expected a list for {type_name(attr_type)}, got {type(value).__name__} {value!r:.60}"
        ok = _ELEMENT_OK[_ELEMENT_OF[attr_type]]
        for i, v in enumerate(value):
            if not ok(v):
                return f"expected {type_name(attr_type)}, element {i} is {type(v).__name__} {v!r:.60}"
        return None
    ok = _ELEMENT_OK.get(attr_type)
    if ok is None:
        return f"unsupported attribute type {type_name(attr_type)}"
    if not ok(value):
        return f"expected {type_name(attr_type)}, got {type(value).__name__} {value!r:.60}"
    return None


# Encodings Paddle writes for a declared type: wider or narrower ints and floats
_ACCEPTED_AS = {(A.INT, A.LONG), (A.LONG, A.INT), (A.FLOAT, A.FLOAT64), (A.FLOAT64, A.FLOAT), (A.INTS, A.LONGS),
                (A.LONGS, A.INTS), (A.FLOATS, A.FLOAT64S), (A.FLOAT64S, A.FLOATS)}


def coerce(want: int, have: int, value):
    """A value written as AttrType `have` read as the declared `want` where Paddle mixes them (INT vs
    LONG, FLOAT vs FLOAT64, an int for a float, a number for a SCALAR); anything else is returned as
    it is, for check_value to report."""
    if want == have or (want, have) in _ACCEPTED_AS:
        return value
    if want in (A.FLOAT, A.FLOAT64) and have in (A.INT, A.LONG):
        return float(value)
    return value


def normalize(attr_type: int, value):
    """The canonical Python value of a checked attribute (ints as int, floats as float)."""
    if attr_type in (A.FLOAT, A.FLOAT64):
        return float(value)
    if attr_type in (A.INT, A.LONG, A.BLOCK):
        return int(value)
    if attr_type in (A.FLOATS, A.FLOAT64S):
        return [float(v) for v in value]
    if attr_type in (A.INTS, A.LONGS, A.BLOCKS):
        return [int(v) for v in value]
    if attr_type in LISTS:
        return list(value)
    return value


def _scalar_to_pb(msg, v) -> None:
    if isinstance(v, bool):
        msg.type, msg.b = pb.Scalar.BOOLEAN, v
    elif _is_int(v):
        msg.type, msg.i = pb.Scalar.LONG, int(v)
    elif isinstance(v, complex):
        msg.type = pb.Scalar.COMPLEX128
        msg.c.r, msg.c.i = v.real, v.imag
    else:
        msg.type, msg.r = pb.Scalar.FLOAT64, float(v)


def _scalar_from_pb(msg):
    t = msg.type
    if t == pb.Scalar.BOOLEAN:
        return msg.b
    if t == pb.Scalar.LONG:
        return msg.i
    if t == pb.Scalar.COMPLEX128:
        return complex(msg.c.r, msg.c.i)
    return msg.r


def write(attr_msg, name: str, attr_type: int, value) -> None:
    """Fill an OpDesc.Attr message (already checked with check_value)."""
    attr_msg.Clear()
    attr_msg.name = name
    attr_msg.type = attr_type
    field = FIELD[attr_type]
    if attr_type == A.SCALAR:
        _scalar_to_pb(attr_msg.scalar, value)
    elif attr_type == A.SCALARS:
        for v in value:
            _scalar_to_pb(attr_msg.scalars.add(), v)
    elif attr_type in LISTS:
        getattr(attr_msg, field).extend(value)
    else:
        setattr(attr_msg, field, value)


def read(attr_msg):
    """The Python value an OpDesc.Attr holds."""
    t = attr_msg.type
    field = FIELD.get(t)
    if field is None:
        raise TypeError(f"attribute {attr_msg.name!r} has unsupported type {type_name(t)}")
    if t == A.SCALAR:
        return _scalar_from_pb(attr_msg.scalar)
    if t == A.SCALARS:
        return [_scalar_from_pb(s) for s in attr_msg.scalars]
    v = getattr(attr_msg, field)
    return list(v) if t in LISTS else v


# -- JSON-able values (the views and the outline read attributes through these) -------------------------
def json_float(x: float, single: bool):
    if not math.isfinite(x):
        return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")
    return float(f"{x:.7g}") if single else float(x)  # float32 storage: what was meant


def jsonable(v, single: bool = False):
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return v
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        return json_float(v, single)
    if isinstance(v, (list, tuple)):
        return [jsonable(x, single) for x in v]
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    return str(v)


# attribute types as plain ints (a protobuf enum attribute lookup costs a Python call each time)
_J_FLOATISH = frozenset({int(A.FLOAT), int(A.FLOATS)})
_J_SCALARISH = frozenset({int(A.SCALAR), int(A.SCALARS)})
_J_FIELD = {int(k): v for k, v in FIELD.items()}
_J_LISTS = frozenset(int(k) for k in LISTS)
_J_PLAIN = frozenset({int(A.INT), int(A.LONG), int(A.STRING), int(A.BOOLEAN)})


def json_value(a):
    """An OpDesc.Attr's value as JSON can carry it (floats of FLOAT attributes as float32 meant them;
    non-finite ones as strings). TypeError for an unknown type."""
    t = a.type
    field = _J_FIELD.get(t)
    if field is None or t in _J_SCALARISH:
        value = read(a)
    else:
        value = getattr(a, field)
        if t in _J_PLAIN:
            return value
        if t in _J_LISTS:
            value = list(value)
    return jsonable(value, single=t in _J_FLOATISH)
