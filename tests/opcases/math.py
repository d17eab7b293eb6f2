"""Cases for kernelcore/ops/math.py and activation.py."""
import numpy as np

from . import Case

rng = np.random.default_rng(0)


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


CASES = [
    Case("elementwise_add", {"X": f32(3, 4), "Y": f32(3, 4)}, lambda X, Y, **a: {"Out": X + Y}, id="add_same"),
    Case("elementwise_add", {"X": f32(2, 3, 4), "Y": f32(3)}, lambda X, Y, axis: {"Out": X + Y.reshape(1, 3, 1)},
         attrs={"axis": 1}, id="add_axis1"),
    Case("elementwise_sub", {"X": f32(2, 3), "Y": f32(3)}, lambda X, Y, **a: {"Out": X - Y}, id="sub_trailing"),
    Case("elementwise_mul", {"X": f32(4, 3), "Y": f32(4)}, lambda X, Y, axis: {"Out": X * Y[:, None]},
         attrs={"axis": 0}, id="mul_axis0"),
    Case("elementwise_div", {"X": f32(2, 5), "Y": np.abs(f32(2, 5)) + 0.5},
         lambda X, Y, **a: {"Out": X / Y}, id="div"),
    Case("relu", {"X": f32(3, 5)}, lambda X: {"Out": np.maximum(X, 0)}),
    Case("sigmoid", {"X": f32(3, 5)}, lambda X: {"Out": (1 / (1 + np.exp(-X.astype(np.float64)))).astype(np.float32)}),
    Case("tanh", {"X": f32(3, 5)}, lambda X: {"Out": np.tanh(X)}),
    Case("exp", {"X": f32(3, 5)}, lambda X: {"Out": np.exp(X)}),
]
