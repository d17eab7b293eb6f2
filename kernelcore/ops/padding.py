"""The `pad` op (paddle.nn.functional.pad's constant mode on tensors other than 3-5-D NC.. layouts, and the
ConstantPad1D/3D and ZeroPad layers): every dim padded before and after by `paddings[2i]`, `paddings[2i+1]`."""
from __future__ import annotations

from ..errors import OpValidationError
from ..ir.proto.framework_pb2 import AttrType as A
from ..ir.registry import Attr, In, Out, register_op


def pad_widths(paddings, ndim: int) -> list[tuple[int, int]]:
    """Paddle's flat [before0, after0, before1, after1, ...] as NumPy's pairs; checked against X's rank."""
    if len(paddings) != 2 * ndim or any(p < 0 for p in paddings):
        raise OpValidationError(f"pad: paddings must hold 2 non-negative values per dim of the {ndim}-d X, "
                                f"got {list(paddings)}")
    return [(paddings[2 * i], paddings[2 * i + 1]) for i in range(ndim)]


def _infer_pad(ic):
    shape = ic.shape("X")
    try:
        widths = pad_widths(ic.attr("paddings"), len(shape))
    except OpValidationError as e:
        ic.fail(str(e))
    ic.set_output("Out", [d + b + a if d >= 0 else -1 for d, (b, a) in zip(shape, widths)], ic.dtype("X"))


PAD = register_op(
    "pad", "Out = X with `paddings[2i]` values before and `paddings[2i+1]` after it along each dim i, all "
           "`pad_value`.",
    inputs=[In("X", "the input tensor")], outputs=[Out("Out", "X grown by the paddings, X's dtype")],
    attrs=[Attr("paddings", A.INTS, "before and after each dim, 2 * rank values"),
           Attr("pad_value", A.FLOAT, "the value written into the padding", 0.0)],
    infer_shape=_infer_pad)


@PAD.kernel()
def pad(ctx, ins, attrs):
    (x,) = ins
    widths = pad_widths(attrs["paddings"], x.ndim)
    return (ctx.xp.pad(x, widths, mode="constant", constant_values=x.dtype.type(attrs["pad_value"])),)


def unpad(g, widths):
    """The slice of a padded tensor that the unpadded one occupies."""
    return g[tuple(slice(b, g.shape[i] - a) for i, (b, a) in enumerate(widths))]
