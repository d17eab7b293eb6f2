"""Elementwise ops of two tensors beside math.py's arithmetic: max, min, mod and pow with Paddle's `axis` (Y's dims
line up with X's from `axis`), the logical and bitwise binaries (broadcast like NumPy), and their one-operand
nots.
"""
from __future__ import annotations

from ..ir.proto.framework_pb2 import VarType as VT
from ..ir.registry import In, Out, register_op
from .math import align, register_elementwise_binary

# -- elementwise binaries ------------------------------------------------------------------------------
BINARY = {
    "elementwise_max": ("max(X, Y)", lambda xp, x, y: xp.maximum(x, y)),
    "elementwise_min": ("min(X, Y)", lambda xp, x, y: xp.minimum(x, y)),
    "elementwise_mod": ("X mod Y (the remainder takes Y's sign, as Python's %)", lambda xp, x, y: xp.mod(x, y)),
    "elementwise_pow": ("X ^ Y", lambda xp, x, y: xp.power(x, y)),
}


def _xp_binary_kernel(body):
    def kernel(ctx, ins, attrs):
        x, y = ins
        if attrs["axis"] != -1:
            x, y = align(ctx.xp, x, y, attrs["axis"])
        return (body(ctx.xp, x, y),)
    return kernel


for _type, (_formula, _body) in BINARY.items():
    register_elementwise_binary(_type, _formula, _xp_binary_kernel(_body))


# -- logical and bitwise ---------------------------------------------------------------------------------
def _infer_logical(ic):
    from ..ir.shape_inference import broadcast_shapes
    out = broadcast_shapes(ic.shape("X"), ic.shape("Y"), -1, ic)
    ic.set_output("Out", out, VT.BOOL)


LOGICAL = {"logical_and": ("X and Y", "logical_and"), "logical_or": ("X or Y", "logical_or"),
           "logical_xor": ("X xor Y", "logical_xor")}

for _type, (_formula, _fn) in LOGICAL.items():
    _d = register_op(_type, f"Out = {_formula}, elementwise, as bool (nonzero is true); X and Y broadcast "
                            f"like NumPy.",
                     inputs=[In("X", "the left operand"), In("Y", "the right operand")],
                     outputs=[Out("Out", "bool tensor of the broadcast shape")], infer_shape=_infer_logical)

    def _k(ctx, ins, attrs, _fn=_fn):
        return (getattr(ctx.xp, _fn)(ins[0], ins[1]),)
    _k.__name__ = _type
    _d.kernel()(_k)


LOGICAL_NOT = register_op(
    "logical_not", "Out = not X, elementwise, as bool.",
    inputs=[In("X", "the operand (nonzero is true)")], outputs=[Out("Out", "bool, X's shape")],
    infer_shape=lambda ic: ic.set_output("Out", ic.shape("X"), VT.BOOL))

@LOGICAL_NOT.kernel()
def logical_not(ctx, ins, attrs):
    return (ctx.xp.logical_not(ins[0]),)


def _infer_bitwise(ic):
    from ..ir.shape_inference import broadcast_shapes
    if ic.dtype("X") != ic.dtype("Y"):
        ic.fail(f"X is {ic.dtype_name(ic.dtype('X'))} but Y is {ic.dtype_name(ic.dtype('Y'))}; expected the "
                f"same dtype")
    _check_integral(ic)
    ic.set_output("Out", broadcast_shapes(ic.shape("X"), ic.shape("Y"), -1, ic), ic.dtype("X"))


_INTEGRAL = (VT.BOOL, VT.UINT8, VT.INT8, VT.INT16, VT.INT32, VT.INT64)


def _check_integral(ic):
    if ic.dtype("X") not in _INTEGRAL:
        ic.fail(f"X must be bool or an integer type, got {ic.dtype_name(ic.dtype('X'))}")


BITWISE = {"bitwise_and": ("X & Y", "bitwise_and"), "bitwise_or": ("X | Y", "bitwise_or"),
           "bitwise_xor": ("X ^ Y", "bitwise_xor")}

for _type, (_formula, _fn) in BITWISE.items():
    _d = register_op(_type, f"Out = {_formula}, bitwise and elementwise, on bool or integer tensors of one dtype "
                            f"(broadcast like NumPy).",
                     inputs=[In("X", "the left operand"), In("Y", "the right operand")],
                     outputs=[Out("Out", "X's dtype, the broadcast shape")], infer_shape=_infer_bitwise)

    def _k(ctx, ins, attrs, _fn=_fn):
        x, y = ins
        if x.dtype.kind not in "biu":
            raise TypeError(f"X must be bool or an integer type, got {x.dtype}")
        return (getattr(ctx.xp, _fn)(x, y),)
    _k.__name__ = _type
    _d.kernel()(_k)


def _infer_bitwise_not(ic):
    _check_integral(ic)
    ic.set_output("Out", ic.shape("X"), ic.dtype("X"))


BITWISE_NOT = register_op("bitwise_not", "Out = ~X, bitwise (logical not for bool).",
                          inputs=[In("X", "a bool or integer tensor")], outputs=[Out("Out", "X's shape and dtype")],
                          infer_shape=_infer_bitwise_not)


@BITWISE_NOT.kernel()
def bitwise_not(ctx, ins, attrs):
    x = ins[0]
    if x.dtype.kind not in "biu":
        raise TypeError(f"X must be bool or an integer type, got {x.dtype}")
    return (ctx.xp.invert(x),)
