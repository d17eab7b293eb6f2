"""More arithmetic, as Transformer/BERT programs and paddle.* tensor functions write it: unary math (abs, sqrt,
rsqrt, log, pow, clip, gelu), log_softmax, elementwise max/min/mod/pow, logical and bitwise binaries, and the
reductions max/min/prod/any/all. Same conventions as math.py: Y lines up with X from `axis`; reductions take
dim/keep_dim/reduce_all.
"""
from __future__ import annotations

import math

from ..ir.proto.framework_pb2 import AttrType as A
from ..ir.proto.framework_pb2 import VarType as VT
from ..ir.registry import Attr, In, Out, register_op
from ._infer import elementwise, normalize_axis, same_as
from .math import _fail, align, _infer_reduce, _reduce_attrs, reduce_axes

SQRT_HALF = 1.0 / math.sqrt(2.0)


ERFC_COEFFS = (-1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806, 0.27886807, -1.13520398, 1.48851587,
               -0.82215223, 0.17087277)


def erfc_nonnegative(xp, z):
    """erfc(z) for z >= 0, computed in place in z's buffer's dtype (z is consumed: pass a fresh array): Numerical
    Recipes' Chebyshev fit, fractional error below 1.2e-7."""
    t = z * 0.5
    t += 1
    xp.reciprocal(t, out=t)
    poly = t * ERFC_COEFFS[-1]  # Horner's rule in place: a fifth less time than with a temporary per step
    for c in ERFC_COEFFS[-2:0:-1]:
        poly += c
        poly *= t
    poly += ERFC_COEFFS[0]
    z *= z
    poly -= z
    r = xp.exp(poly, out=poly)
    r *= t
    return r


def normal_cdf(xp, x):
    """Phi(x) = erfc(-x / sqrt 2) / 2, the standard normal CDF, in x's dtype (NumPy has no erf). From
    h = Phi(-|x|) = erfc(|x| / sqrt 2) / 2, Phi(x) = 0.5 + copysign(0.5 - h, x): one sign pass with no mask
    (xp.where on a mask of random signs took 250 us of gelu's 600 on [8, 128, 64] float32). Below about -5.4
    (float32) Phi rounds to 0, as 1 + erf does in Paddle's float32 kernel."""
    z = xp.abs(x)
    z *= x.dtype.type(SQRT_HALF)
    h = erfc_nonnegative(xp, z)
    h *= 0.5
    xp.subtract(0.5, h, out=h)
    xp.copysign(h, x, out=h)
    h += 0.5
    return h.astype(x.dtype, copy=False)


def gelu_of(xp, x, approximate: bool):
    """x * Phi(x) (exact, via normal_cdf) or Paddle's tanh form 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
    if approximate:
        inner = x.dtype.type(math.sqrt(2 / math.pi)) * (x + x.dtype.type(0.044715) * x * x * x)
        return x.dtype.type(0.5) * x * (1 + xp.tanh(inner))
    out = normal_cdf(xp, x)
    out *= x
    return out


# -- unary math -----------------------------------------------------------------------------------------
UNARY = {
    "abs": ("Out = |X|", lambda xp, x: xp.abs(x)),
    "sqrt": ("Out = sqrt(X)", lambda xp, x: xp.sqrt(x)),
    "rsqrt": ("Out = 1 / sqrt(X)", lambda xp, x: 1 / xp.sqrt(x)),
    "log": ("Out = ln(X)", lambda xp, x: xp.log(x)),
}

for _type, (_formula, _body) in UNARY.items():
    _d = register_op(_type, f"{_formula}, elementwise.", inputs=[In("X", "the input tensor")],
                     outputs=[Out("Out", "a tensor of X's shape and dtype")], infer_shape=same_as())

    def _k(ctx, ins, attrs, _body=_body):
        return (_body(ctx.xp, ins[0]),)
    _k.__name__ = _type
    _d.kernel()(_k)


GELU = register_op(
    "gelu", "Out = X * Phi(X), Phi the standard normal CDF: exactly (0.5 X (1 + erf(X / sqrt 2))), or with "
            "`approximate` Paddle's tanh form 0.5 X (1 + tanh(sqrt(2/pi) (X + 0.044715 X^3))).",
    inputs=[In("X", "the input tensor")], outputs=[Out("Out", "a tensor of X's shape and dtype")],
    attrs=[Attr("approximate", A.BOOLEAN, "use the tanh approximation", False)], infer_shape=same_as())


@GELU.kernel()
def gelu(ctx, ins, attrs):
    return (gelu_of(ctx.xp, ins[0], attrs["approximate"]),)


def _one_tensor_value(t, slot: str, dtype):
    """A one-element override tensor as a 0-d array of `dtype` (stays on the device)."""
    if t.size != 1:
        raise ValueError(f"{slot} must hold exactly one value, got shape {list(t.shape)}")
    return t.reshape(()).astype(dtype)


POW = register_op(
    "pow", "Out = X ^ factor, elementwise. FactorTensor (one element), when given, replaces `factor`.",
    inputs=[In("X", "the input tensor"),
            In("FactorTensor", "(one-element float tensor) the exponent; overrides `factor`", dispensable=True)],
    outputs=[Out("Out", "a tensor of X's shape and dtype")],
    attrs=[Attr("factor", A.FLOAT, "the exponent", 1.0)], infer_shape=same_as())


@POW.kernel()
def pow_(ctx, ins, attrs):
    x, ft = ins
    f = attrs["factor"] if ft is None else _one_tensor_value(ft, "FactorTensor", x.dtype)
    if x.dtype.kind in "iu" and ft is None:
        f = int(f) if float(f).is_integer() else f
    return (ctx.xp.power(x, f).astype(x.dtype, copy=False),)


pow_.__name__ = "pow"

CLIP = register_op(
    "clip", "Out = min(max(X, min), max), elementwise. The Min/Max tensors (one element each), when given, "
            "replace the attributes. min must not exceed max.",
    inputs=[In("X", "the input tensor"),
            In("Min", "(one element) the lower bound; overrides `min`", dispensable=True),
            In("Max", "(one element) the upper bound; overrides `max`", dispensable=True)],
    outputs=[Out("Out", "a tensor of X's shape and dtype")],
    attrs=[Attr("min", A.FLOAT, "the lower bound"), Attr("max", A.FLOAT, "the upper bound")],
    infer_shape=same_as())


def clip_bounds(x, mn_t, mx_t, attrs):
    lo = x.dtype.type(attrs["min"]) if mn_t is None else _one_tensor_value(mn_t, "Min", x.dtype)
    hi = x.dtype.type(attrs["max"]) if mx_t is None else _one_tensor_value(mx_t, "Max", x.dtype)
    return lo, hi


@CLIP.kernel()
def clip(ctx, ins, attrs):
    x, mn_t, mx_t = ins
    if mn_t is None and mx_t is None and attrs["min"] > attrs["max"]:
        raise ValueError(f"min ({attrs['min']}) must not be greater than max ({attrs['max']})")
    lo, hi = clip_bounds(x, mn_t, mx_t, attrs)
    return (ctx.xp.minimum(ctx.xp.maximum(x, lo), hi),)


def _infer_log_softmax(ic):
    x = ic.shape("X")
    if x:
        normalize_axis(ic.attr("axis"), len(x), ic)
    ic.set_output("Out", x, ic.dtype("X"))


LOG_SOFTMAX = register_op(
    "log_softmax", "Out = X - max - log(sum(exp(X - max))) along `axis`: the log of softmax, computed stably.",
    inputs=[In("X", "the input tensor (logits)")], outputs=[Out("Out", "log-probabilities, X's shape")],
    attrs=[Attr("axis", A.INT, "the dim to normalise over, in [-rank, rank)", -1)],
    infer_shape=_infer_log_softmax)


@LOG_SOFTMAX.kernel()
def log_softmax(ctx, ins, attrs):
    xp, x = ctx.xp, ins[0]
    if x.ndim == 0:
        return (xp.zeros_like(x),)
    axis = normalize_axis(attrs["axis"], x.ndim)
    s = x - x.max(axis=axis, keepdims=True)
    return (s - xp.log(xp.exp(s).sum(axis=axis, keepdims=True)),)


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
    _d = register_op(
        _type, f"Out = {_formula}, elementwise. Y is broadcast against X; its dims line up with X's starting at "
               f"`axis` (-1: the trailing dims).",
        inputs=[In("X", "the first operand"), In("Y", "the second operand, broadcast to X")],
        outputs=[Out("Out", "the result, of the broadcast shape")],
        attrs=[Attr("axis", A.INT, "the dim of X where Y's dims start; -1 aligns trailing dims", -1)],
        infer_shape=elementwise)
    _k = _xp_binary_kernel(_body)
    _k.__name__ = _type
    _d.kernel()(_k)


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
