"""Padding: pad3d. (The shape ops around it in vision programs, squeeze2 / unsqueeze2 / flatten_contiguous_range,
are dims.py's.) Paddle's Conv1D, Pool1D and Pad2D layers write
unsqueeze2 -> (conv2d | pool2d | pad3d) -> squeeze2.
"""
from __future__ import annotations


from ..ir.proto.framework_pb2 import AttrType as A
from ..ir.registry import Attr, Check, In, Out, register_op
from ._spatial import attr_or
from .tensor import host_ints


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


def pad_widths(p, fmt):
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
        widths = pad_widths(attr_or(ic, "paddings", [0] * 6), attr_or(ic, "data_format", "NCDHW"))
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
    p = host_ints(pad_t) if pad_t is not None else list(attrs["paddings"])
    widths = pad_widths(p, attrs["data_format"])
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
