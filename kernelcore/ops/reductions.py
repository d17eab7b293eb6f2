"""The reductions besides math.py's sums and means: reduce_max, reduce_min, reduce_prod, and the logical
reduce_any and reduce_all. Like math.py's, they take dim / keep_dim / reduce_all.
"""
from __future__ import annotations

from ..ir.proto.framework_pb2 import AttrType as A
from ..ir.proto.framework_pb2 import VarType as VT
from ..ir.registry import Attr, In, Out, register_op
from .math import _fail, _infer_reduce, _reduce_attrs, reduce_axes

# -- reductions ------------------------------------------------------------------------------------------
_AXIS_TENSORS = [In("AxisTensor", "(1-D int tensor) the dims; overrides `dim` (not supported by kernelcore)",
                    dispensable=True),
                 In("AxisTensorList", "(1-element int tensors) the dims; override `dim` (not supported)",
                    duplicable=True, dispensable=True)]


def _reducer(method):
    def kernel(ctx, ins, attrs):
        x = ins[0]
        if len(ins) > 1 and (ins[1] is not None or ins[2]):
            raise ValueError("AxisTensor/AxisTensorList are not supported; give the dims in `dim`")
        axes = reduce_axes(attrs["dim"], x.ndim, attrs["reduce_all"], _fail)
        out = getattr(x, method)(axis=axes, keepdims=attrs["keep_dim"])
        return (ctx.xp.asarray(out).astype(x.dtype if method not in ("any", "all") else bool, copy=False),)
    return kernel


REDUCE = {
    "reduce_max": ("max", "the largest element", False),
    "reduce_min": ("min", "the smallest element", False),
    "reduce_prod": ("prod", "the product", False),
    "reduce_any": ("any", "whether any element is true", True),
    "reduce_all": ("all", "whether every element is true", True),
}

for _type, (_method, _what, _logical) in REDUCE.items():
    _d = register_op(
        _type, f"Out = {_what} of X over `dim`" + (", as bool." if _logical else ", of X's dtype."),
        inputs=[In("X", "the input tensor"), *(_AXIS_TENSORS if _logical else [])],
        outputs=[Out("Out", "the reduced tensor")],
        attrs=[a if a.name != "dim" or not _logical else Attr("dim", A.LONGS, a.comment, [0])
               for a in _reduce_attrs(_method)],
        infer_shape=_infer_reduce((lambda x_dtype, out_dtype: VT.BOOL) if _logical
                                  else (lambda x_dtype, out_dtype: x_dtype)))
    _k = _reducer(_method)
    _k.__name__ = _type
    _d.kernel()(_k)
