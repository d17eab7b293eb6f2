"""The optimizer updates in one elementwise kernel each on a GPU (sgd, momentum, adam, adamw), where the reference
(kernelcore/ops/optimizer.py) runs each array expression as its own launch (momentum 5, adam 23: counted by
bench/device_launches.py). The learning rate and the beta powers stay on the device (raw one-element arguments,
read by every thread): no host round trip. `1 - beta` is made in double precision and passed, as the reference
makes it; the float32 operations are the reference's, in its order. What the kernels do not cover goes to the
reference: float16 parameters and master weights, adam's amsgrad, SkipUpdate and its tensor overrides."""
from __future__ import annotations

import numpy as np

from ..runtime.fast_paths import fast_kernel
from .declare import ELEMENTWISE, declare, f32, i32, on_device

ONE = np.float32(1)

SGD = declare("kc_sgd", ELEMENTWISE, "p_out = p - lr[0] * g;", in_params="T p, T g, raw T lr",
              out_params="T p_out", twin=lambda p, g, lr: p - lr.reshape(-1)[0] * g)


def _momentum_twin(p, g, v, lr, mu, rescale, l2, nesterov):
    g = g * rescale
    if l2:
        g = g + l2 * p
    v_out = v * mu + g
    step = v_out * mu + g if nesterov else v_out
    return p - lr.reshape(-1)[0] * step, v_out


MOMENTUM = declare(
    "kc_momentum", ELEMENTWISE,
    "T gg = g * rescale; if (l2 != (T)0) gg = gg + l2 * p; v_out = v * mu + gg; "
    "p_out = p - lr[0] * (nesterov ? v_out * mu + gg : v_out);",
    in_params="T p, T g, T v, raw T lr, T mu, T rescale, T l2, int32 nesterov", out_params="T p_out, T v_out",
    twin=_momentum_twin)


def _adam_twin(p, g, m1, m2, lr, b1p, b2p, beta1, beta2, c1, c2, eps, lr_ratio, coeff, decay):
    b1, b2, lr = b1p.reshape(-1)[0], b2p.reshape(-1)[0], lr.reshape(-1)[0] * lr_ratio
    if decay:
        p = p * (ONE - lr * coeff)
    s = np.sqrt(ONE - b2)
    m1_out = m1 * beta1 + g * c1
    m2_out = m2 * beta2 + (g * g) * c2
    step = m1_out / (np.sqrt(m2_out) + eps * s) * ((lr * s) / (ONE - b1))
    return p - step, m1_out, m2_out


ADAM = declare(
    "kc_adam", ELEMENTWISE,
    "T lr_t = lr[0] * lr_ratio; T pd = decay ? p * ((T)1 - lr_t * coeff) : p; T s = sqrt((T)1 - b2p[0]); "
    "m1_out = m1 * beta1 + g * c1; m2_out = m2 * beta2 + (g * g) * c2; "
    "p_out = pd - m1_out / (sqrt(m2_out) + eps * s) * ((lr_t * s) / ((T)1 - b1p[0]));",
    in_params="T p, T g, T m1, T m2, raw T lr, raw T b1p, raw T b2p, T beta1, T beta2, T c1, T c2, T eps, "
              "T lr_ratio, T coeff, int32 decay",
    out_params="T p_out, T m1_out, T m2_out", twin=_adam_twin)


def _written_into(ctx, slot: str, value):
    """The array an output is written into: the input's own where the executor donated it (`ctx.donated`,
    kernelcore/runtime/runner.py: no one else holds it) and it owns its memory, else a fresh one. An elementwise
    kernel reads each element before writing it, so the output may be its input."""
    if slot in ctx.donated and value.base is None:
        return value
    return ctx.xp.empty(value.shape, dtype=value.dtype)


def _plain(xp, attrs, param, grad, lr, master, *same_shape) -> bool:
    """float32 on the device, Grad and the accumulators of Param's shape, one learning rate, no master weights."""
    if master is not None and attrs.get("multi_precision"):
        return False
    return (on_device(xp, param, grad, lr, *same_shape) and lr.size == 1
            and all(a.shape == param.shape for a in (grad, *same_shape)))


@fast_kernel("sgd", lambda xp, ins, attrs: _plain(xp, attrs, ins[0], ins[2], ins[1], ins[3]), place="gpu")
def sgd(ctx, ins, attrs):
    param, lr, grad, _master = ins
    return SGD.on(ctx.xp)(param, grad, lr, _written_into(ctx, "Param", param)), None


@fast_kernel("momentum", lambda xp, ins, attrs: _plain(xp, attrs, ins[0], ins[1], ins[3], ins[4], ins[2]),
             place="gpu")
def momentum(ctx, ins, attrs):
    param, grad, velocity, lr, _master = ins
    l2 = attrs["regularization_coeff"] if attrs["regularization_method"] == "l2_decay" else 0.0
    p_out, v_out = MOMENTUM.on(ctx.xp)(param, grad, velocity, lr, f32(attrs["mu"]), f32(attrs["rescale_grad"]),
                                       f32(l2), i32(attrs["use_nesterov"]), _written_into(ctx, "Param", param),
                                       _written_into(ctx, "Velocity", velocity))
    return p_out, v_out, None


def _adam_gate(xp, ins, attrs):
    (param, grad, lr, m1, m2, m2max, b1p, b2p, master, skip, b1t, b2t, epst) = ins
    if attrs["amsgrad"] or any(t is not None for t in (skip, b1t, b2t, epst)):
        return False
    return _plain(xp, attrs, param, grad, lr, master, m1, m2) and on_device(xp, b1p, b2p) \
        and b1p.size == 1 and b2p.size == 1


@fast_kernel("adam", _adam_gate, place="gpu")
def adam(ctx, ins, attrs):
    return _adam(ctx, ins, attrs, 1.0, 0.0, False)


@fast_kernel("adamw", _adam_gate, place="gpu")
def adamw(ctx, ins, attrs):
    """AdamW: adam at LearningRate * lr_ratio, Param first decayed by (1 - that * coeff) where with_decay."""
    return _adam(ctx, ins, attrs, attrs["lr_ratio"], attrs["coeff"], attrs["with_decay"])


def _adam(ctx, ins, attrs, lr_ratio, coeff, decay):
    (param, grad, lr, m1, m2, _m2max, b1p, b2p, *_rest) = ins
    beta1, beta2 = attrs["beta1"], attrs["beta2"]
    p_out, m1_out, m2_out = ADAM.on(ctx.xp)(param, grad, m1, m2, lr, b1p, b2p, f32(beta1), f32(beta2),
                                            f32(1 - beta1), f32(1 - beta2), f32(attrs["epsilon"]), f32(lr_ratio),
                                            f32(coeff), i32(decay))
    if attrs["use_global_beta_pow"]:
        return p_out, m1_out, m2_out, None, None, None, None
    return p_out, m1_out, m2_out, None, b1p * b1p.dtype.type(beta1), b2p * b2p.dtype.type(beta2), None
