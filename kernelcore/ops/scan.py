"""Running reductions along one axis: cumsum, cumprod, logcumsumexp, cummax and cummin (with the position of
each running extreme)."""
from __future__ import annotations

import math

from ..ir.proto.framework_pb2 import AttrType as A
from ..ir.proto.framework_pb2 import VarType as VT
from ..ir import dtypes
from ..ir.registry import Attr, In, Out, register_op
from ._infer import normalize_axis, same_as


def reversed_along(x, axis):
    return x[(slice(None),) * axis + (slice(None, None, -1),)]


def shifted_exclusive(xp, x, axis, fill):
    """x moved one step along `axis`, `fill` first: the running value of the elements before each."""
    pad = xp.full(x.shape[:axis] + (1,) + x.shape[axis + 1:], fill, dtype=x.dtype)
    return xp.concatenate([pad, x[(slice(None),) * axis + (slice(None, -1),)]], axis=axis)


def scan(xp, x, axis, reverse, exclusive, step, fill):
    """step(x, axis) (a running reduction) with Paddle's `reverse` and `exclusive`."""
    t = reversed_along(x, axis) if reverse else x
    out = step(t, axis)
    if exclusive:
        out = shifted_exclusive(xp, out, axis, fill)
    return reversed_along(out, axis).copy() if reverse else out


CUMPROD = register_op(
    "cumprod", "Out[..., i, ...] = the product of X[..., :i + 1, ...] along `dim` (reverse: from the end; "
               "exclusive: the element itself left out).",
    inputs=[In("X", "the input tensor")], outputs=[Out("Out", "X's shape and dtype")],
    attrs=[Attr("dim", A.INT, "the axis"), Attr("exclusive", A.BOOLEAN, "leave each element out", False),
           Attr("reverse", A.BOOLEAN, "run from the end", False)], infer_shape=same_as())


def cumprod_axis(x, attrs):
    return normalize_axis(attrs["dim"], max(x.ndim, 1))


@CUMPROD.kernel()
def cumprod(ctx, ins, attrs):
    xp = ctx.xp
    x = ins[0].reshape(-1) if ins[0].ndim == 0 else ins[0]
    out = scan(xp, x, cumprod_axis(x, attrs), attrs["reverse"], attrs["exclusive"],
               lambda t, a: xp.cumprod(t, axis=a), x.dtype.type(1))
    return (out.reshape(ins[0].shape),)


LOGCUMSUMEXP = register_op(
    "logcumsumexp", "Out[..., i, ...] = log(sum(exp(X[..., :i + 1, ...]))) along `axis` (flatten: over X as 1-D).",
    inputs=[In("X", "the input tensor")], outputs=[Out("Out", "X's shape (1-D with flatten), X's dtype")],
    attrs=[Attr("axis", A.INT, "the axis", -1), Attr("flatten", A.BOOLEAN, "scan X as one vector", False),
           Attr("exclusive", A.BOOLEAN, "leave each element out", False),
           Attr("reverse", A.BOOLEAN, "run from the end", False)])


def logcumsumexp_of(xp, t, axis):
    m = t.max(axis=axis, keepdims=True) if t.size else xp.zeros_like(t)
    m = xp.where(xp.isfinite(m), m, t.dtype.type(0))
    return xp.log(xp.cumsum(xp.exp(t - m), axis=axis)) + m


def logcumsumexp_input(x, attrs):
    t = x.reshape(-1) if attrs["flatten"] or x.ndim == 0 else x
    return t, normalize_axis(attrs["axis"], t.ndim) if not attrs["flatten"] and x.ndim else 0


@LOGCUMSUMEXP.kernel()
def logcumsumexp(ctx, ins, attrs):
    xp = ctx.xp
    t, axis = logcumsumexp_input(ins[0], attrs)
    return (scan(xp, t, axis, attrs["reverse"], attrs["exclusive"], lambda v, a: logcumsumexp_of(xp, v, a),
                 t.dtype.type(-float("inf"))),)


def running_extreme(xp, x, axis, bigger: bool):
    """(running max or min, the position of its latest holder) along `axis`."""
    acc = xp.maximum if bigger else xp.minimum
    out = acc.accumulate(x, axis=axis)
    pos = xp.arange(x.shape[axis]).reshape([-1 if d == axis else 1 for d in range(x.ndim)])
    holder = xp.where(x == out, pos, 0)
    return out, xp.maximum.accumulate(xp.broadcast_to(holder, x.shape), axis=axis)


def _make_cum_extreme(op_type, bigger):
    d = register_op(
        op_type, f"out = the running {'max' if bigger else 'min'} of x along `axis`; indices = where it was "
                 "(the latest of equal values).",
        inputs=[In("x", "the input tensor")],
        outputs=[Out("out", "x's shape and dtype"), Out("indices", "x's shape, `dtype` (int32 or int64)")],
        attrs=[Attr("axis", A.INT, "the axis", -1), Attr("dtype", A.INT, "(VarType) the indices' dtype", VT.INT64)])

    @d.kernel()
    def kernel(ctx, ins, attrs):
        x = ins[0].reshape(-1) if ins[0].ndim == 0 else ins[0]
        out, idx = running_extreme(ctx.xp, x, normalize_axis(attrs["axis"], x.ndim), bigger)
        return out.reshape(ins[0].shape), idx.astype(dtypes.to_numpy(attrs["dtype"])).reshape(ins[0].shape)
    kernel.__name__ = op_type
    return d


CUMMAX = _make_cum_extreme("cummax", True)
CUMMIN = _make_cum_extreme("cummin", False)


# -- cumsum ----------------------------------------------------------------------------------------------
CUMSUM = register_op(
    "cumsum", "Out = the running sum of X along `axis` (of the flattened X with `flatten`); `exclusive` leaves "
              "out each element itself, `reverse` sums from the end.",
    inputs=[In("X", "the input tensor")], outputs=[Out("Out", "X's shape (1-D with flatten), X's dtype")],
    attrs=[Attr("axis", A.INT, "the dim to sum along", -1),
           Attr("flatten", A.BOOLEAN, "sum over the flattened X", False),
           Attr("exclusive", A.BOOLEAN, "exclude each element from its own sum", False),
           Attr("reverse", A.BOOLEAN, "sum from the last element backwards", False)])


def _cumsum_infer(ic):
    x = ic.shape("X")
    if ic.attr("flatten"):
        n = math.prod(x) if all(d >= 0 for d in x) else -1
        ic.set_output("Out", (n,), ic.dtype("X"))
        return
    if x:
        normalize_axis(ic.attr("axis"), len(x), ic)
    ic.set_output("Out", x, ic.dtype("X"))


CUMSUM.infer_shape = _cumsum_infer


def cumsum_of(xp, x, axis: int, exclusive: bool, reverse: bool):
    if reverse:
        x = xp.flip(x, axis=axis)
    out = xp.cumsum(x, axis=axis, dtype=x.dtype)
    if exclusive:
        out = out - x
    if reverse:
        out = xp.flip(out, axis=axis)
    return xp.ascontiguousarray(out)


@CUMSUM.kernel()
def cumsum(ctx, ins, attrs):
    x = ins[0]
    if attrs["flatten"] or x.ndim == 0:
        x, axis = x.reshape(-1), 0
    else:
        axis = normalize_axis(attrs["axis"], x.ndim)
    return (cumsum_of(ctx.xp, x, axis, attrs["exclusive"], attrs["reverse"]),)
