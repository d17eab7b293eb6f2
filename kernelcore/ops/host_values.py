"""Tensors read or made on the host: shape (a tensor's shape as int32), range (arange from Start/End/Step tensors)
and assign_value (literal values from the op's attributes).
"""
from __future__ import annotations

import math

import numpy as np

from ..ir import dtypes
from ..runtime.place import to_host
from ..ir.proto.framework_pb2 import AttrType as A
from ..ir.registry import Attr, In, Out, register_op
from .tensor import NUMPY_DTYPE

VT = dtypes.VT


# -- shape, range, assign_value ---------------------------------------------------------------------------
SHAPE = register_op(
    "shape", "Out = the shape of Input as a 1-D int32 tensor (one entry per dim).",
    inputs=[In("Input", "any tensor")], outputs=[Out("Out", "int32 [rank]")],
    infer_shape=lambda ic: ic.set_output("Out", (len(ic.shape("Input")),), VT.INT32))


@SHAPE.kernel()
def shape(ctx, ins, attrs):
    return (ctx.xp.asarray(ins[0].shape, dtype=ctx.xp.int32),)


def _host_scalar(t, slot: str):
    v = np.asarray(to_host(t)).reshape(-1)
    if v.size != 1:
        raise ValueError(f"{slot} must hold one value, got {v.size}")
    return v[0].item()


RANGE = register_op(
    "range", "Out = [Start, Start + Step, ...) up to End (exclusive), of Start's dtype: "
             "ceil((End - Start) / Step) elements. Step must not be 0.",
    inputs=[In("Start", "(one element) the first value"), In("End", "(one element) the bound, exclusive"),
            In("Step", "(one element) the spacing, nonzero")],
    outputs=[Out("Out", "1-D, Start's dtype")],
    infer_shape=lambda ic: ic.set_output("Out", (-1,), ic.dtype("Start")))


@RANGE.kernel()
def range_(ctx, ins, attrs):
    start, end, step = (_host_scalar(t, s) for t, s in zip(ins, ("Start", "End", "Step")))
    if step == 0:
        raise ValueError("Step must not be 0")
    n = max(int(math.ceil((end - start) / step)), 0)
    dt = ins[0].dtype
    xp = ctx.xp
    steps = xp.arange(n, dtype=xp.float64 if dt.kind == "f" else xp.int64)
    return ((steps * step + start).astype(dt),)


range_.__name__ = "range"

_VALUE_FIELDS = {VT.BOOL: "bool_values", VT.INT32: "int32_values", VT.INT64: "int64_values",
                 VT.FP32: "fp32_values", VT.FP64: "fp64_values"}

ASSIGN_VALUE = register_op(
    "assign_value", "Out = a tensor of `shape` and `dtype` holding the values of the attribute that matches the "
                    "dtype (bool_values, int32_values, int64_values, fp32_values, fp64_values), row-major.",
    outputs=[Out("Out", "the constant tensor")],
    attrs=[Attr("shape", A.INTS, "the output's shape"),
           Attr("dtype", A.INT, "(VarType) the output's dtype: bool, int32, int64, float32 or float64",
                checks=(NUMPY_DTYPE,)),
           Attr("bool_values", A.INTS, "the values when dtype is bool (as 0/1)", []),
           Attr("int32_values", A.INTS, "the values when dtype is int32", []),
           Attr("int64_values", A.LONGS, "the values when dtype is int64", []),
           Attr("fp32_values", A.FLOATS, "the values when dtype is float32", []),
           Attr("fp64_values", A.FLOAT64S, "the values when dtype is float64", [])],
    infer_shape=lambda ic: ic.set_output("Out", tuple(ic.attr("shape")), ic.attr("dtype")))


@ASSIGN_VALUE.kernel()
def assign_value(ctx, ins, attrs):
    field = _VALUE_FIELDS.get(attrs["dtype"])
    if field is None:
        raise ValueError(f"dtype {attrs['dtype']} has no values attribute; expected bool, int32, int64, "
                         f"float32 or float64")
    vals, shape_ = attrs[field], attrs["shape"]
    if len(vals) != math.prod(shape_):
        raise ValueError(f"{field} holds {len(vals)} values but shape {shape_} needs {math.prod(shape_)}")
    host = np.asarray(vals, dtype=dtypes.to_numpy(attrs["dtype"])).reshape(shape_)
    return (ctx.xp.asarray(host),)
