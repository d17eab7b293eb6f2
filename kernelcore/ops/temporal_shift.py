"""temporal_shift (TSM video models): X [N T, C, H, W] seen as N clips of seg_num frames; the first
shift_ratio of the channels take the previous frame's values, the next shift_ratio the next frame's (0 past
either end)."""
from __future__ import annotations

from ..ir.proto.framework_pb2 import AttrType as A
from ..ir.registry import Attr, In, Out, register_op
from ._infer import same_as

TEMPORAL_SHIFT = register_op(
    "temporal_shift", "Out[n, t, c] = X[n, t - 1, c] for c < C shift_ratio, X[n, t + 1, c] for the next C shift_ratio "
                      "channels, X[n, t, c] for the rest (0 outside the clip).",
    inputs=[In("X", "[N T, C, H, W] (or NHWC)")], outputs=[Out("Out", "X's shape and dtype")],
    attrs=[Attr("seg_num", A.INT, "T, the frames per clip"), Attr("shift_ratio", A.FLOAT, "the shifted share", 0.25),
           Attr("data_format", A.STRING, "'NCHW' or 'NHWC'", "NCHW")], infer_shape=same_as())


def clips(x, attrs):
    """X as [N, T, C, H, W] (channels moved to dim 2), and the two shifted channel counts."""
    t = attrs["seg_num"]
    if x.ndim != 4 or t <= 0 or x.shape[0] % t:
        raise ValueError(f"temporal_shift takes a 4-d X whose first dim divides by seg_num={t}, got {list(x.shape)}")
    if attrs["data_format"] == "NHWC":
        x = x.transpose(0, 3, 1, 2)
    v = x.reshape((x.shape[0] // t, t) + x.shape[1:])
    c = v.shape[2]
    return v, int(c * attrs["shift_ratio"]), int(c * 2 * attrs["shift_ratio"])


def shift_frames(xp, v, c1, c2, back: bool):
    """Channels [0, c1) from frame t - 1 and [c1, c2) from frame t + 1; with `back` the other way round (the
    gradient sends each value back to the frame it came from)."""
    out = v.copy()
    out[:, :, :c2] = 0
    earlier, later = slice(None, -1), slice(1, None)
    prev_src, prev_dst = (later, earlier) if back else (earlier, later)
    out[:, prev_dst, :c1] = v[:, prev_src, :c1]
    out[:, prev_src, c1:c2] = v[:, prev_dst, c1:c2]
    return out


def as_input_layout(xp, v, x_shape, fmt):
    out = v.reshape((v.shape[0] * v.shape[1],) + v.shape[2:])
    return xp.ascontiguousarray(out.transpose(0, 2, 3, 1)) if fmt == "NHWC" else out


@TEMPORAL_SHIFT.kernel()
def temporal_shift(ctx, ins, attrs):
    v, c1, c2 = clips(ins[0], attrs)
    return (as_input_layout(ctx.xp, shift_frames(ctx.xp, v, c1, c2, back=False), ins[0].shape,
                            attrs["data_format"]),)
