"""Cases for the ops the API sweep found missing (kernelcore/ops/unary_math.py, padding.py, reorder.py,
norms_p.py, ...): NumPy references written from the ops' definitions, in float64 where Paddle's op takes it.

Rounding halves away from zero is checked on exact halves, where NumPy's own rounding (to even) differs.
"""
import math

import numpy as np

from . import Case

rng = np.random.default_rng(33)


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def f64(*shape, low=-2.0, high=2.0):
    return rng.uniform(low, high, shape)


def out(fn):
    return lambda X, **a: {"Out": fn(X)}


UNIT = f64(3, 4, low=-0.9, high=0.9)
ABOVE_ONE = f64(3, 4, low=1.1, high=3.0)
POSITIVE = f64(3, 4, low=0.1, high=3.0)
HALVES = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.49, -0.51])
SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, 1.5, -2.0], np.float32)

CASES = [
    Case("square", {"X": f32(3, 4)}, out(lambda x: x * x)),
    Case("square", {"X": np.arange(-3, 3).astype(np.int64)}, out(lambda x: x * x), id="square_int64"),
    Case("reciprocal", {"X": POSITIVE}, out(lambda x: 1 / x)),
    Case("floor", {"X": f64(3, 4)}, out(np.floor)),
    Case("ceil", {"X": f32(3, 4)}, out(np.ceil)),
    Case("trunc", {"X": f64(3, 4)}, out(lambda x: np.where(x < 0, np.ceil(x), np.floor(x)))),
    Case("round", {"X": HALVES}, out(lambda x: np.array([math.copysign(math.floor(abs(v) + 0.5), v) for v in x])),
         id="round_halves_away_from_zero"),
    Case("round", {"X": np.array([1.25, -2.35, 0.123])}, lambda X, **a: {"Out": np.array([1.3, -2.4, 0.1])},
         attrs={"decimals": 1}, id="round_decimals"),
    Case("sign", {"X": np.array([-2.0, 0.0, 3.0], np.float32)}, out(lambda x: np.array([-1, 0, 1], np.float32))),
    Case("cos", {"X": f64(3, 4)}, out(np.cos)),
    Case("sin", {"X": f32(3, 4)}, out(np.sin)),
    Case("tan", {"X": UNIT}, out(np.tan)),
    Case("acos", {"X": UNIT}, out(np.arccos)),
    Case("asin", {"X": UNIT}, out(np.arcsin)),
    Case("atan", {"X": f64(3, 4)}, out(np.arctan)),
    Case("cosh", {"X": f64(3, 4)}, out(np.cosh)),
    Case("sinh", {"X": f64(3, 4)}, out(np.sinh)),
    Case("acosh", {"X": ABOVE_ONE}, out(np.arccosh)),
    Case("asinh", {"X": f64(3, 4)}, out(np.arcsinh)),
    Case("atanh", {"X": UNIT}, out(np.arctanh)),
    Case("log1p", {"X": POSITIVE}, out(lambda x: np.log(1 + x))),
    Case("log2", {"X": POSITIVE}, out(lambda x: np.log(x) / np.log(2))),
    Case("log10", {"X": POSITIVE}, out(lambda x: np.log(x) / np.log(10))),
    Case("expm1", {"X": f64(3, 4)}, out(lambda x: np.exp(x) - 1)),
    Case("isnan_v2", {"X": SPECIAL}, out(lambda x: np.array([1, 0, 0, 0, 0, 0], bool))),
    Case("isinf_v2", {"X": SPECIAL}, out(lambda x: np.array([0, 1, 1, 0, 0, 0], bool))),
    Case("isfinite_v2", {"X": SPECIAL}, out(lambda x: np.array([0, 0, 0, 1, 1, 1], bool))),
    # pad: [before, after] per dim
    Case("pad", {"X": np.arange(6.0).reshape(2, 3)},
         lambda X, **a: {"Out": np.array([[9, 9, 9, 9, 9, 9], [9, 0, 1, 2, 9, 9], [9, 3, 4, 5, 9, 9]], float)},
         attrs={"paddings": [1, 0, 1, 2], "pad_value": 9.0}),
    # reorder
    Case("flip", {"X": np.arange(6).reshape(2, 3)}, lambda X, **a: {"Out": np.array([[5, 4, 3], [2, 1, 0]])},
         attrs={"axis": [0, -1]}),
    Case("channel_shuffle", {"X": np.arange(6.0).reshape(1, 6, 1, 1)},
         lambda X, **a: {"Out": np.array([0, 3, 1, 4, 2, 5], float).reshape(1, 6, 1, 1)}, attrs={"groups": 2}),
    Case("channel_shuffle", {"X": np.arange(6.0).reshape(1, 1, 1, 6)},
         lambda X, **a: {"Out": np.array([0, 2, 4, 1, 3, 5], float).reshape(1, 1, 1, 6)},
         attrs={"groups": 3, "data_format": "NHWC"}, id="channel_shuffle_nhwc"),
    Case("pixel_shuffle", {"X": np.arange(8.0).reshape(1, 8, 1, 1)},
         lambda X, **a: {"Out": np.array([[[[0, 1], [2, 3]], [[4, 5], [6, 7]]]], float)},
         attrs={"upscale_factor": 2}),
    Case("pixel_unshuffle", {"X": np.array([[[[0, 1], [2, 3]], [[4, 5], [6, 7]]]], float)},
         lambda X, **a: {"Out": np.arange(8.0).reshape(1, 8, 1, 1)}, attrs={"downscale_factor": 2}),
    Case("pixel_unshuffle", {"X": np.arange(8.0).reshape(1, 2, 2, 2)},
         lambda X, **a: {"Out": np.arange(8.0).reshape(1, 2, 2, 2).transpose(0, 3, 1, 2).reshape(1, 1, 1, 8)},
         attrs={"downscale_factor": 2, "data_format": "NHWC"}, id="pixel_unshuffle_nhwc"),
    # norms
    Case("p_norm", {"X": np.array([[3.0, -4.0], [1.0, 0.0]])}, lambda X, **a: {"Out": np.array([5.0, 1.0])}),
    Case("p_norm", {"X": np.array([[3.0, -4.0], [1.0, 0.0]])}, lambda X, **a: {"Out": np.array([[3.0, 4.0]])},
         attrs={"porder": math.inf, "axis": 0, "keepdim": True}, id="p_norm_inf"),
    Case("p_norm", {"X": np.array([[3.0, -4.0], [1.0, 0.0]])}, lambda X, **a: {"Out": np.array(3.0)},
         attrs={"porder": 0.0, "asvector": True}, id="p_norm_zero_counts"),
    Case("p_norm", {"X": np.array([[1.0, -2.0], [3.0, 0.0]])}, lambda X, **a: {"Out": np.array([9.0, 27.0]) ** (1 / 3)},
         attrs={"porder": 3.0}, id="p_norm_3"),
    Case("frobenius_norm", {"X": np.array([[[3.0, 4.0]], [[0.0, 1.0]]])},
         lambda X, **a: {"Out": np.array([5.0, 1.0])}, attrs={"dim": [1, 2]}),
]
