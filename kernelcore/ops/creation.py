"""Tensors made from a shape or from small inputs: empty, eye, linspace, meshgrid and diag_v2.

`empty`'s values are unspecified in Paddle (whatever memory held); here they are zeros, so a run is repeatable."""
from __future__ import annotations

from ..ir import dtypes
from ..ir.proto.framework_pb2 import AttrType as A
from ..ir.proto.framework_pb2 import VarType as VT
from ..ir.registry import Attr, In, Out, register_op
from .tensor import NUMPY_DTYPE, check_new_shape, host_ints, one_int

EMPTY = register_op(
    "empty", "Out = a tensor of `shape` (or ShapeTensor / ShapeTensorList) and `dtype`; zeros here.",
    inputs=[In("ShapeTensor", "(1-D int tensor) the shape; overrides `shape`", dispensable=True),
            In("ShapeTensorList", "(1-element int tensors) the dims one by one", duplicable=True, dispensable=True)],
    outputs=[Out("Out", "the new tensor")],
    attrs=[Attr("shape", A.LONGS, "the shape", []),
           Attr("dtype", A.INT, "(VarType) the dtype", VT.FP32, checks=(NUMPY_DTYPE,))])


def given_shape(shape_tensor, shape_list, attr_shape) -> list[int]:
    """Paddle's priority: ShapeTensor, then ShapeTensorList, then the attribute; bounded in size."""
    if shape_tensor is not None:
        shape = host_ints(shape_tensor)
    elif shape_list:
        shape = [one_int(t, "each ShapeTensorList entry") for t in shape_list]
    else:
        shape = list(attr_shape)
    if any(d < 0 for d in shape):
        raise ValueError(f"every dim of the shape must be >= 0, got {shape}")
    check_new_shape(shape)
    return shape


@EMPTY.kernel()
def empty(ctx, ins, attrs):
    shape_tensor, shape_list = ins
    shape = given_shape(shape_tensor, shape_list, attrs["shape"])
    return (ctx.xp.zeros(shape, dtype=dtypes.to_numpy(attrs["dtype"])),)


EYE = register_op(
    "eye", "Out = a [num_rows, num_columns] matrix with ones on the diagonal.",
    outputs=[Out("Out", "the matrix")],
    attrs=[Attr("num_rows", A.LONG, "rows"), Attr("num_columns", A.LONG, "columns (-1: num_rows)", -1),
           Attr("dtype", A.INT, "(VarType) the dtype", VT.FP32, checks=(NUMPY_DTYPE,))])


@EYE.kernel()
def eye(ctx, ins, attrs):
    rows = attrs["num_rows"]
    cols = rows if attrs["num_columns"] < 0 else attrs["num_columns"]
    check_new_shape([rows, cols])
    return (ctx.xp.eye(rows, cols, dtype=dtypes.to_numpy(attrs["dtype"])),)


LINSPACE = register_op(
    "linspace", "Out = Num evenly spaced values from Start to Stop, both included.",
    inputs=[In("Start", "(one element) the first value"), In("Stop", "(one element) the last value"),
            In("Num", "(one int element) how many values")],
    outputs=[Out("Out", "[Num], `dtype`")],
    attrs=[Attr("dtype", A.INT, "(VarType) the dtype", VT.FP32, checks=(NUMPY_DTYPE,))])


@LINSPACE.kernel()
def linspace(ctx, ins, attrs):
    xp = ctx.xp
    start, stop, num = ins
    n = one_int(num, "Num")
    if n < 1:
        raise ValueError(f"linspace: Num must be >= 1, got {n}")
    check_new_shape([n])
    dt = dtypes.to_numpy(attrs["dtype"])
    a, b = start.reshape(()).astype(xp.float64), stop.reshape(()).astype(xp.float64)
    if n == 1:
        return (a.reshape(1).astype(dt),)
    # Paddle's kernel counts the second half back from Stop, so Stop itself comes out exact
    step = (b - a) / (n - 1)
    idx = xp.arange(n, dtype=xp.float64)
    return (xp.where(idx < n // 2, a + step * idx, b - step * (n - 1 - idx)).astype(dt),)


MESHGRID = register_op(
    "meshgrid", "Out[k] = X[k] (1-D) repeated over the grid of all the X's sizes, varying along dim k ('ij').",
    inputs=[In("X", "1-D (or 0-d) tensors", duplicable=True)],
    outputs=[Out("Out", "one grid per X, each [len(X[0]), len(X[1]), ...]", duplicable=True)])


def _infer_meshgrid(ic):
    shapes = ic.shapes("X")
    grid = [s[0] if s else 1 for s in shapes]
    for i in range(len(shapes)):
        ic.set_output("Out", grid, ic.dtype("X", i), i)


MESHGRID.infer_shape = _infer_meshgrid


@MESHGRID.kernel()
def meshgrid(ctx, ins, attrs):
    (xs,) = ins
    if any(x.ndim > 1 for x in xs):
        raise ValueError(f"meshgrid takes 1-D tensors, got shapes {[list(x.shape) for x in xs]}")
    return ([g.copy() for g in ctx.xp.meshgrid(*[x.reshape(-1) for x in xs], indexing="ij")],)


DIAG_V2 = register_op(
    "diag_v2", "1-D X: Out = a square matrix with X on diagonal `offset`, padding_value elsewhere. 2-D X: Out = its "
               "diagonal `offset`.",
    inputs=[In("X", "1-D or 2-D")], outputs=[Out("Out", "2-D or 1-D, X's dtype")],
    attrs=[Attr("offset", A.INT, "the diagonal (> 0 above the main one)", 0),
           Attr("padding_value", A.FLOAT, "the value off the diagonal (1-D X)", 0.0)])


@DIAG_V2.kernel()
def diag_v2(ctx, ins, attrs):
    xp = ctx.xp
    (x,) = ins
    k = attrs["offset"]
    if x.ndim <= 1:
        v = x.reshape(-1)
        n = v.shape[0] + abs(k)
        out = xp.full((n, n), x.dtype.type(attrs["padding_value"]), dtype=x.dtype)
        rows = xp.arange(v.shape[0]) + max(-k, 0)
        out[rows, rows + k] = v
        return (out,)
    if x.ndim != 2:
        raise ValueError(f"diag_v2 takes a 1-D or 2-D X, got shape {list(x.shape)}")
    return (xp.diagonal(x, k).copy(),)
