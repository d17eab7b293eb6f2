"""Tensors made from a shape or from small inputs: empty, eye, linspace, meshgrid, diag_v2, logspace, the triangle
indices, and the random randint and randperm.

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


LOGSPACE = register_op(
    "logspace", "Out = Base ^ (Num evenly spaced exponents from Start to Stop, both included).",
    inputs=[In("Start", "(one element) the first exponent"), In("Stop", "(one element) the last exponent"),
            In("Num", "(one int element) how many values"), In("Base", "(one element) the base")],
    outputs=[Out("Out", "[Num], `dtype`")],
    attrs=[Attr("dtype", A.INT, "(VarType) the dtype", VT.FP32, checks=(NUMPY_DTYPE,))])


@LOGSPACE.kernel()
def logspace(ctx, ins, attrs):
    xp = ctx.xp
    start, stop, num, base = ins
    (exponents,) = linspace(ctx, (start, stop, num), {"dtype": VT.FP64})
    return (xp.power(base.reshape(()).astype(xp.float64), exponents).astype(dtypes.to_numpy(attrs["dtype"])),)


def _triangle_indices(op_type, rows_attr, cols_attr, lower):
    d = register_op(
        op_type, f"out = [2, n]: the row and column of each element {'on or below' if lower else 'on or above'} "
                 "diagonal `offset` of a rows x cols matrix, row by row.",
        outputs=[Out("out", "[2, n], `dtype`")],
        attrs=[Attr(rows_attr, A.INT, "rows"), Attr(cols_attr, A.INT, "columns"),
               Attr("offset", A.INT, "the diagonal", 0),
               Attr("dtype", A.INT, "(VarType) the dtype", VT.INT64, checks=(NUMPY_DTYPE,))])

    @d.kernel()
    def kernel(ctx, ins, attrs):
        xp = ctx.xp
        rows, cols = attrs[rows_attr], attrs[cols_attr]
        check_new_shape([rows, cols])
        pick = xp.tril_indices if lower else xp.triu_indices
        r, c = pick(rows, attrs["offset"], cols)
        return (xp.stack([r, c]).astype(dtypes.to_numpy(attrs["dtype"])),)
    kernel.__name__ = op_type


_triangle_indices("tril_indices", "rows", "cols", True)
_triangle_indices("triu_indices", "row", "col", False)


def unit_draws(ctx, rng, shape):
    """float64 draws in [0, 1) from either generator API (NumPy's Generator, CuPy's RandomState)."""
    if ctx.place.kind == "cpu":
        return rng.random(shape)
    return rng.random_sample(size=shape)


RANDINT = register_op(
    "randint", "Out = a tensor of `shape` with integers drawn uniformly from [low, high).",
    inputs=[In("ShapeTensor", "(1-D int tensor) the shape; overrides `shape`", dispensable=True),
            In("ShapeTensorList", "(1-element int tensors) the dims one by one", duplicable=True, dispensable=True)],
    outputs=[Out("Out", "the random tensor")],
    attrs=[Attr("low", A.INT, "the smallest value", 0), Attr("high", A.INT, "one past the largest"),
           Attr("shape", A.LONGS, "the shape", []),
           Attr("dtype", A.INT, "(VarType) the dtype", VT.INT64, checks=(NUMPY_DTYPE,)),
           Attr("seed", A.INT, "the seed (0: the program's generator)", 0)])


@RANDINT.kernel()
def randint(ctx, ins, attrs):
    xp = ctx.xp
    low, high = attrs["low"], attrs["high"]
    if high <= low:
        raise ValueError(f"randint: high ({high}) must exceed low ({low})")
    shape = given_shape(ins[0], ins[1], attrs["shape"])
    u = unit_draws(ctx, ctx.rng(attrs["seed"]), tuple(shape))
    return ((low + xp.floor(u * (high - low))).astype(dtypes.to_numpy(attrs["dtype"])),)


RANDPERM = register_op(
    "randperm", "Out = a random permutation of 0 .. n-1.", outputs=[Out("Out", "[n], `dtype`")],
    attrs=[Attr("n", A.INT, "the length"), Attr("dtype", A.INT, "(VarType) the dtype", VT.INT64, checks=(NUMPY_DTYPE,)),
           Attr("seed", A.INT, "the seed (0: the program's generator)", 0)])


@RANDPERM.kernel()
def randperm(ctx, ins, attrs):
    n = attrs["n"]
    if n < 0:
        raise ValueError(f"randperm: n must be >= 0, got {n}")
    check_new_shape([n])
    u = unit_draws(ctx, ctx.rng(attrs["seed"]), (n,))
    return (ctx.xp.argsort(u).astype(dtypes.to_numpy(attrs["dtype"])),)
