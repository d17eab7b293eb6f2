"""reduce_amax / reduce_amin (paddle.amax / amin): max and min over dims, whose gradient, unlike reduce_max's,
is shared evenly among tied extremes."""
from __future__ import annotations

from ..ir.proto.framework_pb2 import AttrType as A
from ..ir.registry import Attr, In, Out, register_op
from .math import reduce_axes


def _fail(message):
    raise ValueError(message)


def extrema_axes(x, attrs):
    return reduce_axes(attrs["dim"], x.ndim, attrs["reduce_all"], _fail)


def _make(op_type, method, what):
    d = register_op(
        op_type, f"Out = the {what} of X over the dims in `dim` (every dim with reduce_all or an empty dim).",
        inputs=[In("X", "the input tensor"),
                In("AxisTensor", "(not read: `dim` holds the dims)", dispensable=True),
                In("AxisTensorList", "(not read)", duplicable=True, dispensable=True)],
        outputs=[Out("Out", "X reduced, X's dtype")],
        attrs=[Attr("dim", A.LONGS, "the reduced dims", []),
               Attr("keep_dim", A.BOOLEAN, "keep the reduced dims with size 1", False),
               Attr("reduce_all", A.BOOLEAN, "reduce every dim", False),
               Attr("in_dtype", A.INT, "a dtype hint (ignored)", -1, extra=True),
               Attr("out_dtype", A.INT, "a dtype hint (ignored)", -1, extra=True)])

    def kernel(ctx, ins, attrs):
        x = ins[0]
        return (getattr(x, method)(axis=extrema_axes(x, attrs), keepdims=attrs["keep_dim"]),)
    kernel.__name__ = op_type
    d.kernel()(kernel)


_make("reduce_amax", "max", "largest element")
_make("reduce_amin", "min", "smallest element")
