"""Activations and their gradients that CuPy runs as several launches (sigmoid: a negation, an exp, an add and a
division; relu's gradient: a comparison and a product), each as one elementwise kernel over the same float32
operations in the same order as the reference (kernelcore/ops/activation.py, kernelcore/grad/activation.py)."""
from __future__ import annotations

import numpy as np

from ..runtime.fast_paths import fast_kernel
from .declare import ELEMENTWISE, declare, on_device

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


def _register(op_type: str, kernel) -> None:
    def gate(xp, ins, attrs):
        return on_device(xp, *ins) and len({a.shape for a in ins}) == 1

    def run(ctx, ins, attrs):
        return (kernel.on(ctx.xp)(*ins),)
    run.__name__ = op_type
    fast_kernel(op_type, gate, place="gpu")(run)


for _op_type, _kernel in ACTIVATIONS.items():
    _register(_op_type, _kernel)
