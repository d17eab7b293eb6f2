"""Activations and their gradients that CuPy runs as several launches (sigmoid: a negation, an exp, an add and a
division; relu's gradient: a comparison and a product; hard_swish's: two comparisons, two wheres and the
arithmetic), each as one elementwise kernel over the same float32 operations in the same order as the reference
(kernelcore/ops/activation.py, kernelcore/grad/activation.py). Attributes come in as float32 scalars, as the
reference casts them to X's dtype."""
from __future__ import annotations

import numpy as np

from ..ops.pointwise import normal_cdf
from ..runtime.fast_paths import fast_kernel
from .declare import ELEMENTWISE, declare, f32, on_device

ONE = np.float32(1)

# op type -> (its operation, the inputs the grad op reads, the twin)
ACTIVATIONS = {
    "sigmoid": declare("kc_sigmoid", ELEMENTWISE, "y = (T)1 / ((T)1 + exp(-x));", in_params="T x",
                       out_params="T y", twin=lambda x: ONE / (ONE + np.exp(-x))),
    "relu_grad": declare("kc_relu_grad", ELEMENTWISE, "dx = g * (T)(out > (T)0);", in_params="T out, T g",
                         out_params="T dx", twin=lambda out, g: g * (out > 0).astype(np.float32)),
    "sigmoid_grad": declare("kc_sigmoid_grad", ELEMENTWISE, "dx = g * out * ((T)1 - out);",
                            in_params="T out, T g", out_params="T dx", twin=lambda out, g: g * out * (ONE - out)),
    "tanh_grad": declare("kc_tanh_grad", ELEMENTWISE, "dx = g * ((T)1 - out * out);", in_params="T out, T g",
                         out_params="T dx", twin=lambda out, g: g * (ONE - out * out)),
}




def _sigmoid(z):
    return ONE / (ONE + np.exp(-z))


def _hard_swish_grad_twin(x, g, off, thr, sc):
    inner = x + off
    return g * np.where(inner <= 0, np.float32(0), np.where(inner >= thr, thr / sc, (np.float32(2) * x + off) / sc))


def _swish_grad_twin(x, g, beta):
    s = _sigmoid(x * beta)
    return g * (s + beta * x * s * (ONE - s))


# op type -> (the kernel, the attributes it takes as scalars, in its order)
WITH_ATTRIBUTES = {
    "hard_swish": (declare(
        "kc_hard_swish", ELEMENTWISE, "y = x * min(max(x + off, (T)0), thr) / sc;", in_params="T x, T off, T thr, T sc",
        out_params="T y", twin=lambda x, off, thr, sc: x * np.minimum(np.maximum(x + off, np.float32(0)), thr) / sc),
        ("offset", "threshold", "scale")),
    "hard_swish_grad": (declare(
        "kc_hard_swish_grad", ELEMENTWISE,
        "T inner = x + off; dx = g * (inner <= (T)0 ? (T)0 : (inner >= thr ? thr / sc : ((T)2 * x + off) / sc));",
        in_params="T x, T g, T off, T thr, T sc", out_params="T dx", twin=_hard_swish_grad_twin),
        ("offset", "threshold", "scale")),
    "swish": (declare(
        "kc_swish", ELEMENTWISE, "y = x * ((T)1 / ((T)1 + exp(-(x * beta))));", in_params="T x, T beta",
        out_params="T y", twin=lambda x, beta: x * _sigmoid(x * beta)), ("beta",)),
    "swish_grad": (declare(
        "kc_swish_grad", ELEMENTWISE,
        "T s = (T)1 / ((T)1 + exp(-(x * beta))); dx = g * (s + beta * x * s * ((T)1 - s));",
        in_params="T x, T g, T beta", out_params="T dx", twin=_swish_grad_twin), ("beta",)),
    "relu6_grad": (declare(
        "kc_relu6_grad", ELEMENTWISE, "dx = g * (T)(out > (T)0 && out < thr);", in_params="T out, T g, T thr",
        out_params="T dx", twin=lambda out, g, thr: g * ((out > 0) & (out < thr)).astype(np.float32)),
        ("threshold",)),
}


# gelu: exact (x Phi(x), CUDA's normcdff; the twin the reference's normal_cdf, NumPy having no erf) or Paddle's
# tanh form, chosen by the `approximate` attribute as an int argument
K_TANH, C_CUBE, INV_SQRT_2PI = np.float32(np.sqrt(2 / np.pi)), np.float32(0.044715), np.float32(1 / np.sqrt(2 * np.pi))
HALF = np.float32(0.5)


def _gelu_twin(x, approximate):
    if approximate:
        return HALF * x * (ONE + np.tanh(K_TANH * (x + C_CUBE * x * x * x)))
    return normal_cdf(np, x) * x


def _gelu_grad_twin(x, g, approximate):
    if approximate:
        th = np.tanh(K_TANH * (x + C_CUBE * x * x * x))
        return g * (HALF * (ONE + th) + HALF * x * (ONE - th * th) * K_TANH * (ONE + np.float32(3) * C_CUBE * x * x))
    return (x * (np.exp(x * x * np.float32(-0.5)) * INV_SQRT_2PI) + normal_cdf(np, x)) * g


GELU = declare(
    "kc_gelu", ELEMENTWISE,
    "y = approximate ? (T)0.5 * x * ((T)1 + tanh(k * (x + c * x * x * x))) : normcdf(x) * x;",
    in_params="T x, int32 approximate, T k, T c", out_params="T y",
    twin=lambda x, approximate, k, c: _gelu_twin(x, approximate))
GELU_GRAD = declare(
    "kc_gelu_grad", ELEMENTWISE,
    "T th = tanh(k * (x + c * x * x * x)); "
    "dx = approximate ? g * ((T)0.5 * ((T)1 + th) + (T)0.5 * x * ((T)1 - th * th) * k * ((T)1 + (T)3 * c * x * x)) "
    ": (x * (exp(x * x * (T)-0.5) * r) + normcdf(x)) * g;",
    in_params="T x, T g, int32 approximate, T k, T c, T r", out_params="T dx",
    twin=lambda x, g, approximate, k, c, r: _gelu_grad_twin(x, g, approximate))


def _gelu_gate(xp, ins, attrs):
    return on_device(xp, *ins) and len({a.shape for a in ins}) == 1


@fast_kernel("gelu", _gelu_gate, place="gpu")
def gelu(ctx, ins, attrs):
    return (GELU.on(ctx.xp)(ins[0], np.int32(attrs["approximate"]), K_TANH, C_CUBE),)


@fast_kernel("gelu_grad", _gelu_gate, place="gpu")
def gelu_grad(ctx, ins, attrs):
    x, g = ins
    return (GELU_GRAD.on(ctx.xp)(x, g, np.int32(attrs["approximate"]), K_TANH, C_CUBE, INV_SQRT_2PI),)


def _register(op_type: str, kernel, attr_names=()) -> None:
    def gate(xp, ins, attrs):
        return on_device(xp, *ins) and len({a.shape for a in ins}) == 1

    def run(ctx, ins, attrs):
        return (kernel.on(ctx.xp)(*ins, *(f32(attrs[a]) for a in attr_names)),)
    run.__name__ = op_type
    fast_kernel(op_type, gate, place="gpu")(run)


for _op_type, _kernel in ACTIVATIONS.items():
    _register(_op_type, _kernel)
for _op_type, (_kernel, _attrs) in WITH_ATTRIBUTES.items():
    _register(_op_type, _kernel, _attrs)
