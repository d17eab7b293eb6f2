"""The activations vision models write beside relu (kernelcore/ops/activation.py EXTRA: MobileNetV3's hard_sigmoid,
leaky_relu, elu, selu, silu, softplus, mish) and their gradients (kernelcore/grad/activation.py), each one
elementwise kernel where the reference runs a where, a clip, an expm1 and the arithmetic as separate launches.
Each kernel follows the reference's float32 operations in its order: the exponentials of the branch not taken
are of the clipped value, as there, so neither overflows. Attributes come in as float32 scalars, as the reference
casts them to X's dtype (selu's gradient: scale * alpha, multiplied before the cast as there)."""
from __future__ import annotations

import numpy as np

from ..runtime.fast_paths import fast_kernel
from .declare import ELEMENTWISE, declare, f32, on_device

ONE, ZERO = np.float32(1), np.float32(0)


def _sigmoid(z):
    return ONE / (ONE + np.exp(-z))  # ops/activation.py's sigmoid


def _softplus(x, beta, thr):
    bx = x * beta
    return np.where(bx > thr, x, np.log1p(np.exp(np.minimum(bx, thr))) / beta)


def _d_softplus(x, beta, thr):
    bx = x * beta
    return np.where(bx > thr, ONE, _sigmoid(np.minimum(bx, thr)))


def _d_mish(x, thr):
    th = np.tanh(np.where(x > thr, x, np.log1p(np.exp(np.minimum(x, thr)))))
    return th + x * (ONE - th * th) * _d_softplus(x, ONE, thr)


# CUDA helpers of the softplus family, the reference's expressions
SOFTPLUS = r"""
template <typename T> __device__ T kc_sigmoid_of(T z) { return (T)1 / ((T)1 + exp(-z)); }
template <typename T> __device__ T kc_softplus(T x, T beta, T thr) {
    T bx = x * beta;
    return bx > thr ? x : log1p(exp(min(bx, thr))) / beta;
}
template <typename T> __device__ T kc_d_softplus(T x, T beta, T thr) {
    T bx = x * beta;
    return bx > thr ? (T)1 : kc_sigmoid_of(min(bx, thr));
}
"""


def _kernel(name, body, ins, twin, preamble=""):
    return declare(name, ELEMENTWISE, body, in_params=ins, out_params="T y" if "_grad" not in name else "T dx",
                   twin=twin, preamble=preamble)


def _attrs(*names):
    return lambda a: tuple(f32(a[n]) for n in names)


# op type -> (the kernel, which inputs it takes (indices into the op's inputs), its scalars from the attributes)
FORWARD = {
    "hard_sigmoid": (_kernel(
        "kc_hard_sigmoid", "y = min(max(x * slope + offset, (T)0), (T)1);", "T x, T slope, T offset",
        lambda x, slope, offset: np.clip(x * slope + offset, ZERO, ONE)), (0,), _attrs("slope", "offset")),
    "leaky_relu": (_kernel(
        "kc_leaky_relu", "y = x >= (T)0 ? x : x * alpha;", "T x, T alpha",
        lambda x, alpha: np.where(x >= 0, x, x * alpha)), (0,), _attrs("alpha")),
    "elu": (_kernel(
        "kc_elu", "y = x > (T)0 ? x : alpha * expm1(min(x, (T)0));", "T x, T alpha",
        lambda x, alpha: np.where(x > 0, x, alpha * np.expm1(np.minimum(x, ZERO)))), (0,), _attrs("alpha")),
    "selu": (_kernel(
        "kc_selu", "y = scale * (x > (T)0 ? x : alpha * expm1(min(x, (T)0)));", "T x, T scale, T alpha",
        lambda x, scale, alpha: scale * np.where(x > 0, x, alpha * np.expm1(np.minimum(x, ZERO)))), (0,),
        _attrs("scale", "alpha")),
    "silu": (_kernel(
        "kc_silu", "y = x * ((T)1 / ((T)1 + exp(-x)));", "T x", lambda x: x * _sigmoid(x)), (0,), _attrs()),
    "softplus": (_kernel(
        "kc_softplus", "y = kc_softplus(x, beta, thr);", "T x, T beta, T thr", _softplus, SOFTPLUS), (0,),
        _attrs("beta", "threshold")),
    "mish": (_kernel(
        "kc_mish", "y = x * tanh(kc_softplus(x, (T)1, thr));", "T x, T thr",
        lambda x, thr: x * np.tanh(_softplus(x, ONE, thr)), SOFTPLUS), (0,), _attrs("threshold")),
}

# the grad ops' inputs: (X, Out@GRAD), (X, Out, Out@GRAD) for elu and silu, (Out, Out@GRAD) for hard_sigmoid, selu
GRADIENTS = {
    "hard_sigmoid_grad": (_kernel(
        "kc_hard_sigmoid_grad", "dx = g * ((T)(out > (T)0 && out < (T)1) * slope);", "T out, T g, T slope",
        lambda out, g, slope: g * (((out > 0) & (out < 1)).astype(np.float32) * slope)), (0, 1), _attrs("slope")),
    "leaky_relu_grad": (_kernel(
        "kc_leaky_relu_grad", "dx = g * (x >= (T)0 ? (T)1 : alpha);", "T x, T g, T alpha",
        lambda x, g, alpha: g * np.where(x >= 0, ONE, alpha)), (0, 1), _attrs("alpha")),
    "elu_grad": (_kernel(
        "kc_elu_grad", "dx = g * (x > (T)0 ? (T)1 : alpha * exp(min(x, (T)0)));", "T x, T g, T alpha",
        lambda x, g, alpha: g * np.where(x > 0, ONE, alpha * np.exp(np.minimum(x, ZERO)))), (0, 2),
        _attrs("alpha")),
    "selu_grad": (_kernel(
        "kc_selu_grad", "dx = g * (out > (T)0 ? scale : out + scale_alpha);", "T out, T g, T scale, T scale_alpha",
        lambda out, g, scale, scale_alpha: g * np.where(out > 0, scale, out + scale_alpha)), (0, 1),
        lambda a: (f32(a["scale"]), f32(a["scale"] * a["alpha"]))),
    "silu_grad": (_kernel(
        "kc_silu_grad", "T s = (T)1 / ((T)1 + exp(-x)); dx = g * (s * ((T)1 + x * ((T)1 - s)));", "T x, T g",
        lambda x, g: (lambda s: g * (s * (ONE + x * (ONE - s))))(_sigmoid(x))), (0, 2), _attrs()),
    "softplus_grad": (_kernel(
        "kc_softplus_grad", "dx = g * kc_d_softplus(x, beta, thr);", "T x, T g, T beta, T thr",
        lambda x, g, beta, thr: g * _d_softplus(x, beta, thr), SOFTPLUS), (0, 1), _attrs("beta", "threshold")),
    "mish_grad": (_kernel(
        "kc_mish_grad",
        "T th = tanh(x > thr ? x : log1p(exp(min(x, thr)))); dx = g * (th + x * ((T)1 - th * th) * "
        "kc_d_softplus(x, (T)1, thr));", "T x, T g, T thr",
        lambda x, g, thr: g * _d_mish(x, thr), SOFTPLUS), (0, 1), _attrs("threshold")),
}


def _register(op_type: str, kernel, picked: tuple, scalars) -> None:
    def gate(xp, ins, attrs):
        return on_device(xp, *ins) and len({a.shape for a in ins}) == 1

    def run(ctx, ins, attrs):
        return (kernel.on(ctx.xp)(*(ins[i] for i in picked), *scalars(attrs)),)
    run.__name__ = op_type
    fast_kernel(op_type, gate, place="gpu")(run)


for _op_type, (_kernel_decl, _picked, _scalars) in {**FORWARD, **GRADIENTS}.items():
    _register(_op_type, _kernel_decl, _picked, _scalars)
