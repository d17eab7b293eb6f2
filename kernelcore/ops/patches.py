"""unfold (im2col: every sliding window of a padded [N, C, H, W] as a column) and fold (its adjoint: columns added
back into the image), with Paddle's attributes. paddings are [top, left, bottom, right]."""
from __future__ import annotations

import numpy as np

from ..ir.proto.framework_pb2 import AttrType as A
from ..ir.registry import Attr, In, Out, register_op

_WINDOW_ATTRS = [Attr("kernel_sizes", A.INTS, "[kh, kw]"), Attr("strides", A.INTS, "[sh, sw]", [1, 1]),
                 Attr("paddings", A.INTS, "[top, left, bottom, right]", [0, 0, 0, 0]),
                 Attr("dilations", A.INTS, "[dh, dw]", [1, 1])]


def window_rows(size, pad_lo, pad_hi, k, s, d):
    """[k, out] positions in the padded axis each window tap reads."""
    out = (size + pad_lo + pad_hi - (d * (k - 1) + 1)) // s + 1
    if out <= 0:
        raise ValueError(f"the windows do not fit: size {size}, paddings ({pad_lo}, {pad_hi}), kernel {k}, "
                         f"dilation {d}")
    return np.arange(k)[:, None] * d + np.arange(out)[None, :] * s


def geometry(attrs, h, w):
    kh, kw = attrs["kernel_sizes"]
    sh, sw = attrs["strides"]
    top, left, bottom, right = attrs["paddings"]
    dh, dw = attrs["dilations"]
    if min(kh, kw, sh, sw, dh, dw) <= 0 or min(top, left, bottom, right) < 0:
        raise ValueError("kernel_sizes, strides and dilations must be positive, paddings non-negative")
    return window_rows(h, top, bottom, kh, sh, dh), window_rows(w, left, right, kw, sw, dw), (top, left, bottom, right)


def unfold_of(xp, x, attrs):
    if x.ndim != 4:
        raise ValueError(f"unfold takes [N, C, H, W], got {list(x.shape)}")
    n, c, h, w = x.shape
    rows, cols, (top, left, bottom, right) = geometry(attrs, h, w)
    xpad = xp.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)))
    taps = xpad[:, :, xp.asarray(rows)[:, None, :, None], xp.asarray(cols)[None, :, None, :]]  # [N, C, kh, kw, oh, ow]
    return taps.reshape(n, c * rows.shape[0] * cols.shape[0], rows.shape[1] * cols.shape[1])


def fold_of(xp, cols_in, attrs, out_hw):
    """The adjoint of unfold: [N, C kh kw, L] columns added into [N, C, H, W]."""
    h, w = out_hw
    rows, cols, (top, left, bottom, right) = geometry(attrs, h, w)
    kh, oh = rows.shape
    kw, ow = cols.shape
    n, ckk, length = cols_in.shape
    if ckk % (kh * kw) or length != oh * ow:
        raise ValueError(f"fold: X [N, C*{kh}*{kw}, {oh * ow}] expected, got {list(cols_in.shape)}")
    c = ckk // (kh * kw)
    taps = cols_in.reshape(n, c, kh, kw, oh, ow).transpose(2, 3, 4, 5, 0, 1)  # tap and window dims first
    image = xp.zeros((h + top + bottom, w + left + right, n, c), dtype=cols_in.dtype)
    xp.add.at(image, (xp.asarray(rows)[:, None, :, None], xp.asarray(cols)[None, :, None, :]), taps)
    return xp.ascontiguousarray(image[top:top + h, left:left + w].transpose(2, 3, 0, 1))


UNFOLD = register_op("unfold", "Y[n, (c, i, j), (oh, ow)] = X padded [n, c, oh sh + i dh, ow sw + j dw].",
                     inputs=[In("X", "[N, C, H, W]")], outputs=[Out("Y", "[N, C kh kw, L], L the window count")],
                     attrs=_WINDOW_ATTRS)
FOLD = register_op("fold", "Y = the columns of X added back into an output_sizes image (unfold's adjoint).",
                   inputs=[In("X", "[N, C kh kw, L]")], outputs=[Out("Y", "[N, C, H, W]")],
                   attrs=[Attr("output_sizes", A.INTS, "[H, W]"), *_WINDOW_ATTRS])


@UNFOLD.kernel()
def unfold(ctx, ins, attrs):
    return (unfold_of(ctx.xp, ins[0], attrs),)


@FOLD.kernel()
def fold(ctx, ins, attrs):
    if ins[0].ndim != 3:
        raise ValueError(f"fold takes [N, C kh kw, L], got {list(ins[0].shape)}")
    return (fold_of(ctx.xp, ins[0], attrs, attrs["output_sizes"]),)
