"""Shape ops and padding that vision programs write: flatten_contiguous_range, squeeze2, unsqueeze2, pad3d.

squeeze2/unsqueeze2/flatten_contiguous_range carry Paddle's XShape output ([0] + X.dims, no data), as reshape2
does. Paddle's Conv1D, Pool1D and Pad2D layers write unsqueeze2 -> (conv2d | pool2d | pad3d) -> squeeze2.
"""
from __future__ import annotations

import math

import numpy as np

from ..place import to_host
from ..proto.framework_pb2 import AttrType as A
from ..registry import _REGISTRY, Attr, Check, In, Out, register_op
from ._spatial import attr_or

XSHAPE = Out("XShape", "[0] + X.dims, X's dtype, no data: holds X's shape for the gradient op",
             dispensable=True, intermediate=True)


def _xshape(xp, x):
    return xp.empty((0, *x.shape), dtype=x.dtype)


def _set_xshape(ic):
    ic.set_output("XShape", (0, *ic.shape("X")), ic.dtype("X"))


def _host_ints(t):
    return [int(v) for v in np.asarray(to_host(t)).reshape(-1)]


# ---------------------------------------------------------------------------
def flatten_shape(shape, start, stop):
    nd = len(shape)
    if nd == 0:
        return (1,)
    s = start + nd if start < 0 else start
    e = stop + nd if stop < 0 else stop
    if not (0 <= s < nd and 0 <= e < nd):
        raise ValueError(f"start_axis {start} and stop_axis {stop} must lie in [-{nd}, {nd}) for a {nd}-d X")
    if s > e:
        raise ValueError(f"start_axis {start} must not come after stop_axis {stop}")
    mid = -1 if any(d < 0 for d in shape[s:e + 1]) else math.prod(shape[s:e + 1])
    return (*shape[:s], mid, *shape[e + 1:])


def squeeze_shape(shape, axes):
    """Paddle's GetOutputShape for squeeze: axes name dims to drop when they are 1 (others stay, silently);
    no axes = every dim of size 1."""
    nd = len(shape)
    drop = set()
    if not axes:
        drop = {i for i, d in enumerate(shape) if d == 1}
    for a in axes:
        if not -nd <= a < max(nd, 1):
            raise ValueError(f"axes {list(axes)}: {a} is out of range for a {nd}-d X")
        a = a + nd if a < 0 else a
        if nd and shape[a] == 1:
            drop.add(a)
    return tuple(d for i, d in enumerate(shape) if i not in drop)


def unsqueeze_shape(shape, axes):
    """Paddle's GetUnsqueezeShape: axes are inserted one after another, each relative to the rank so far."""
    rank = len(shape) + len(axes)
    cur = len(shape)
    out = [0] * rank
    for a in axes:
        if not -cur - 1 <= a <= cur:
            raise ValueError(f"axes {list(axes)}: {a} is out of range when the rank is {cur}")
        p = a + cur + 1 if a < 0 else a
        for i in range(cur, p - 1, -1):
            if out[i] == 1:
                out[i + 1], out[i] = 1, 0
        out[p] = 1
        cur += 1
    it = iter(shape)
    return tuple(next(it) if v == 0 else 1 for v in out)


def _guard(type_):
    """Register only where another family has not (tensor families may add these shape ops too)."""
    return type_ not in _REGISTRY


if _guard("flatten_contiguous_range"):
    FLATTEN = register_op(
        "flatten_contiguous_range",
        "Out = X with dims start_axis..stop_axis (inclusive) merged into one; a 0-d X becomes [1].",
        inputs=[In("X", "the input")], outputs=[Out("Out", "the flattened tensor, X's dtype"), XSHAPE],
        attrs=[Attr("start_axis", A.INT, "the first merged dim", 1),
               Attr("stop_axis", A.INT, "the last merged dim (inclusive)", 1)])

    def _flatten_infer(ic):
        try:
            out = flatten_shape(ic.shape("X"), attr_or(ic, "start_axis", 1), attr_or(ic, "stop_axis", 1))
        except ValueError as e:
            ic.fail(str(e))
        ic.set_output("Out", out, ic.dtype("X"))
        _set_xshape(ic)

    FLATTEN.infer_shape = _flatten_infer

    @FLATTEN.kernel()
    def flatten_contiguous_range(ctx, ins, attrs):
        x = ins[0]
        return x.reshape(flatten_shape(x.shape, attrs["start_axis"], attrs["stop_axis"])), _xshape(ctx.xp, x)


if _guard("squeeze2"):
    SQUEEZE2 = register_op(
        "squeeze2",
        "Out = X without the size-1 dims that `axes` names (a named dim that is not 1 stays, as in Paddle); "
        "empty axes: without every size-1 dim.",
        inputs=[In("X", "the input")], outputs=[Out("Out", "X's elements, X's dtype"), XSHAPE],
        attrs=[Attr("axes", A.INTS, "the dims to drop, each in [-rank, rank)", [])])

    def _squeeze_infer(ic):
        try:
            out = squeeze_shape(ic.shape("X"), attr_or(ic, "axes", []))
        except ValueError as e:
            ic.fail(str(e))
        ic.set_output("Out", out, ic.dtype("X"))
        _set_xshape(ic)

    SQUEEZE2.infer_shape = _squeeze_infer

    @SQUEEZE2.kernel()
    def squeeze2(ctx, ins, attrs):
        x = ins[0]
        return x.reshape(squeeze_shape(x.shape, attrs["axes"])), _xshape(ctx.xp, x)


if _guard("unsqueeze2"):
    UNSQUEEZE2 = register_op(
        "unsqueeze2",
        "Out = X with size-1 dims inserted at `axes`, one after another (each axis counts in the rank reached "
        "so far). AxesTensor, else AxesTensorList, else `axes` gives the axes.",
        inputs=[In("X", "the input"),
                In("AxesTensor", "(1-D int32/int64) the axes; wins over AxesTensorList and `axes`",
                   dispensable=True),
                In("AxesTensorList", "(1-element int tensors) the axes one by one", duplicable=True,
                   dispensable=True)],
        outputs=[Out("Out", "X's elements, X's dtype"), XSHAPE],
        attrs=[Attr("axes", A.INTS, "where to insert dims", [])])

    def _unsqueeze_infer(ic):
        x = ic.shape("X")
        if ic.has_input("AxesTensor") or ic.has_input("AxesTensorList"):
            n = len(ic.input_names("AxesTensorList")) or len(attr_or(ic, "axes", []))
            if n:
                ic.set_output("Out", (-1,) * (len(x) + n), ic.dtype("X"))
            _set_xshape(ic)
            return
        try:
            out = unsqueeze_shape(x, attr_or(ic, "axes", []))
        except ValueError as e:
            ic.fail(str(e))
        ic.set_output("Out", out, ic.dtype("X"))
        _set_xshape(ic)

    UNSQUEEZE2.infer_shape = _unsqueeze_infer

    @UNSQUEEZE2.kernel()
    def unsqueeze2(ctx, ins, attrs):
        x, axes_t, axes_list = ins
        if axes_t is not None:
            axes = _host_ints(axes_t)
        elif axes_list:
            axes = [v for t in axes_list for v in _host_ints(t)]
        else:
            axes = attrs["axes"]
        return x.reshape(unsqueeze_shape(x.shape, axes)), _xshape(ctx.xp, x)


# ---------------------------------------------------------------------------
PAD_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}

PAD3D = register_op(
    "pad3d",
    "Pad the three spatial dims of a 5-D X: paddings = [left, right, top, bottom, front, back] (width, height, "
    "depth). Modes: constant (`value`), reflect (mirror without the edge), replicate (repeat the edge), circular "
    "(wrap around). Paddle's Pad1D/Pad2D write unsqueeze2 -> pad3d -> squeeze2.",
    inputs=[In("X", "(5-D) [N, C, D, H, W] (or NDHWC)"),
            In("Paddings", "(1-D int32, 6 values) overrides `paddings`", dispensable=True)],
    outputs=[Out("Out", "the padded tensor, X's dtype")],
    attrs=[Attr("paddings", A.INTS, "[left, right, top, bottom, front, back]", [0] * 6),
           Attr("mode", A.STRING, "'constant', 'reflect', 'replicate' or 'circular'", "constant",
                checks=(Check(f"one of {list(PAD_MODES)}", lambda v: v in PAD_MODES),)),
           Attr("value", A.FLOAT, "the fill value in constant mode", 0.0),
           Attr("data_format", A.STRING, "'NCDHW' or 'NDHWC'", "NCDHW",
                checks=(Check("'NCDHW' or 'NDHWC'", lambda v: v in ("NCDHW", "NDHWC")),))])


def _pad_widths(p, fmt):
    if len(p) != 6:
        raise ValueError(f"paddings must hold 6 values [left, right, top, bottom, front, back], got {list(p)}")
    if any(v < 0 for v in p):
        raise ValueError(f"paddings must be >= 0, got {list(p)}")
    spatial = [(p[4], p[5]), (p[2], p[3]), (p[0], p[1])]
    return [(0, 0), *spatial, (0, 0)] if fmt == "NDHWC" else [(0, 0), (0, 0), *spatial]


def _pad3d_infer(ic):
    x = ic.shape("X")
    if len(x) != 5:
        ic.fail(f"X must be 5-D, got shape {list(x)}")
    if ic.has_input("Paddings"):
        ic.set_output("Out", (-1,) * 5, ic.dtype("X"))
        return
    try:
        widths = _pad_widths(attr_or(ic, "paddings", [0] * 6), attr_or(ic, "data_format", "NCDHW"))
    except ValueError as e:
        ic.fail(str(e))
    ic.set_output("Out", tuple(d + lo + hi if d >= 0 else -1 for d, (lo, hi) in zip(x, widths)), ic.dtype("X"))


PAD3D.infer_shape = _pad3d_infer


@PAD3D.kernel()
def pad3d(ctx, ins, attrs):
    x, pad_t = ins
    xp = ctx.xp
    if x.ndim != 5:
        raise ValueError(f"X must be 5-D, got shape {list(x.shape)}")
    p = _host_ints(pad_t) if pad_t is not None else list(attrs["paddings"])
    widths = _pad_widths(p, attrs["data_format"])
    mode = attrs["mode"]
    for (lo, hi), d in zip(widths, x.shape):
        if mode == "reflect" and (lo >= d or hi >= d) and (lo or hi):
            raise ValueError(f"reflect padding {list(p)} must be smaller than the padded dim ({d}) of X "
                             f"{list(x.shape)}")
        if mode == "circular" and (lo > d or hi > d):
            raise ValueError(f"circular padding {list(p)} must not exceed the padded dim ({d}) of X "
                             f"{list(x.shape)}")
    if mode == "constant":
        return (xp.pad(x, widths, mode="constant", constant_values=x.dtype.type(attrs["value"])),)
    return (xp.pad(x, widths, mode=PAD_MODES[mode]),)
