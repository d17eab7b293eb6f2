"""Special functions with xp's elementwise arithmetic only (NumPy and CuPy alike), computed in float64 and
returned in X's dtype: lgamma / gammaln (Lanczos), digamma and polygamma (recurrence, then the asymptotic series),
erf (Taylor series, continued fraction for the tail), erfinv (Giles' start, Newton steps) and the modified Bessel
functions i0, i0e, i1, i1e (power series, asymptotic series for large |x|)."""
from __future__ import annotations

import math

from ..ir.proto.framework_pb2 import AttrType as A
from ..ir.registry import Attr, In, Out, register_op
from ._infer import same_as

_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059,
            12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7)
# B_2k / (2k), for the digamma series; B_2k / (2k)! for the Hurwitz zeta tail
_B2K = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510)


def _lgamma_right(xp, x):
    """lgamma for x >= 0.5."""
    z = x - 1
    a = xp.full(x.shape, _LANCZOS[0])
    for i, c in enumerate(_LANCZOS[1:], start=1):
        a = a + c / (z + i)
    t = z + 7.5
    return 0.5 * math.log(2 * math.pi) + (z + 0.5) * xp.log(t) - t + xp.log(a)


def lgamma_of(xp, x):
    """log |Gamma(x)|; the reflection formula below 0.5 (inf at the poles)."""
    left = x < 0.5
    right = _lgamma_right(xp, xp.where(left, 1 - x, x))
    sin = xp.abs(xp.sin(math.pi * x))
    reflected = math.log(math.pi) - xp.log(xp.where(sin > 0, sin, 1.0)) - right
    return xp.where(left, xp.where(sin > 0, reflected, xp.inf), right)


def digamma_of(xp, x):
    left = x < 0.5
    y = xp.where(left, 1 - x, x)
    acc = xp.zeros(x.shape)
    for _ in range(8):  # psi(y) = psi(y + 1) - 1 / y until y >= 8
        small = y < 8
        acc = acc - xp.where(small, 1 / y, 0.0)
        y = xp.where(small, y + 1, y)
    inv2 = 1 / (y * y)
    series = xp.zeros(x.shape)
    power = inv2
    for k, b in enumerate(_B2K[:6], start=1):  # psi(y) ~ log y - 1/(2y) - sum B_2k / (2k y^2k)
        series = series + b / (2 * k) * power
        power = power * inv2
    psi = acc + xp.log(y) - 0.5 / y - series
    tan = xp.tan(math.pi * x)
    return xp.where(left, xp.where(tan != 0, psi - math.pi / xp.where(tan != 0, tan, 1.0), xp.nan), psi)


def polygamma_of(xp, n: int, x):
    """psi^(n)(x) = (-1)^(n+1) n! zeta(n + 1, x) (n >= 1): a direct sum until x + k >= 12, then Euler-Maclaurin."""
    if n == 0:
        return digamma_of(xp, x)
    s = n + 1
    shift = int(max(0.0, -float(x.min()))) + 12 if x.size else 12
    acc = xp.zeros(x.shape)
    y = x.copy()
    for _ in range(shift):
        small = y < 12
        acc = acc + xp.where(small, 1 / y ** s, 0.0)
        y = xp.where(small, y + 1, y)
    tail = y ** (1 - s) / (s - 1) + 0.5 * y ** (-s)
    rising = float(s)  # s (s + 1) ... (s + 2k - 2)
    for k, b in enumerate(_B2K, start=1):
        tail = tail + b / math.factorial(2 * k) * rising * y ** (-s - 2 * k + 1)
        rising *= (s + 2 * k - 1) * (s + 2 * k)
    return (-1) ** (n + 1) * math.factorial(n) * (acc + tail)


def erf_of(xp, x):
    a = xp.abs(x)
    near = xp.minimum(a, 2.5)
    term = near.copy()
    series = near.copy()
    for k in range(1, 60):  # erf = 2/sqrt(pi) sum (-1)^k x^(2k+1) / (k! (2k+1))
        term = -term * near * near / k
        series = series + term / (2 * k + 1)
    series = series * (2 / math.sqrt(math.pi))
    far = xp.maximum(a, 2.5)
    frac = far.copy()
    for k in range(80, 0, -1):  # erfc by its continued fraction, from the tail
        frac = far + (k / 2) / frac
    tail = 1 - xp.exp(-far * far) / (math.sqrt(math.pi) * frac)
    return xp.sign(x) * xp.where(a <= 2.5, series, tail)


_GILES_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
                  -0.00417768164, 0.246640727, 1.50140941)
_GILES_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
               0.00943887047, 1.00167406, 2.83297682)


def erfinv_of(xp, y):
    inside = xp.abs(y) < 1
    yy = xp.where(inside, y, 0.0)
    w = -xp.log((1 - yy) * (1 + yy))
    central, tail = w - 2.5, xp.sqrt(w) - 3
    p, q = xp.zeros(y.shape), xp.zeros(y.shape)
    for c, d in zip(_GILES_CENTRAL, _GILES_TAIL):
        p, q = p * central + c, q * tail + d
    x = xp.where(w < 5, p, q) * yy
    for _ in range(3):  # Newton on erf(x) = y
        x = x - (erf_of(xp, x) - yy) / (2 / math.sqrt(math.pi) * xp.exp(-x * x))
    edge = xp.where(y == 1, xp.inf, xp.where(y == -1, -xp.inf, xp.nan))
    return xp.where(inside, x, edge)


def bessel_scaled(xp, x, order: int):
    """I_order(|x|) exp(-|x|) for order 0 or 1 (the sign of an odd order is the caller's)."""
    a = xp.abs(x)
    small = xp.minimum(a, 15.0)
    q = small * small / 4
    term = xp.ones(x.shape) if order == 0 else small / 2
    total = term.copy()
    for k in range(1, 80):
        term = term * q / (k * (k + order))
        total = total + term
    big = xp.maximum(a, 15.0)
    mu = 4.0 * order * order
    term, series = xp.ones(x.shape), xp.ones(x.shape)
    for k in range(1, 12):
        term = -term * (mu - (2 * k - 1) ** 2) / (k * 8 * big)
        series = series + term
    return xp.where(a <= 15, total * xp.exp(-small), series / xp.sqrt(2 * math.pi * big))


def bessel_i0(xp, x):
    return bessel_scaled(xp, x, 0) * xp.exp(xp.abs(x))


def bessel_i1(xp, x):
    return xp.sign(x) * bessel_scaled(xp, x, 1) * xp.exp(xp.abs(x))


# op type -> (slots (in, out), formula, body(xp, x float64, attrs))
SPECIAL = {
    "lgamma": (("X", "Out"), "log |Gamma(X)|", lambda xp, x, a: lgamma_of(xp, x)),
    "gammaln": (("x", "out"), "log |Gamma(x)|", lambda xp, x, a: lgamma_of(xp, x)),
    "digamma": (("X", "Out"), "the derivative of lgamma", lambda xp, x, a: digamma_of(xp, x)),
    "polygamma": (("x", "out"), "the n-th derivative of digamma", lambda xp, x, a: polygamma_of(xp, a["n"], x)),
    "erf": (("X", "Out"), "2 / sqrt(pi) * the integral of exp(-t^2) from 0 to X", lambda xp, x, a: erf_of(xp, x)),
    "erfinv": (("X", "Out"), "the inverse of erf on (-1, 1)", lambda xp, x, a: erfinv_of(xp, x)),
    "i0": (("x", "out"), "the modified Bessel function I0", lambda xp, x, a: bessel_i0(xp, x)),
    "i0e": (("x", "out"), "I0(x) exp(-|x|)", lambda xp, x, a: bessel_scaled(xp, x, 0)),
    "i1": (("x", "out"), "the modified Bessel function I1", lambda xp, x, a: bessel_i1(xp, x)),
    "i1e": (("x", "out"), "I1(x) exp(-|x|)", lambda xp, x, a: xp.sign(x) * bessel_scaled(xp, x, 1)),
}


def _register(op_type, slots, formula, body):
    d = register_op(op_type, f"{slots[1]} = {formula}, elementwise.", inputs=[In(slots[0], "the input tensor")],
                    outputs=[Out(slots[1], "its shape and dtype")],
                    attrs=[Attr("n", A.INT, "the derivative's order", 0)] if op_type == "polygamma" else [],
                    infer_shape=same_as(*slots))

    def kernel(ctx, ins, attrs):
        x = ins[0]
        return (body(ctx.xp, x.astype(ctx.xp.float64), attrs).astype(x.dtype),)
    kernel.__name__ = op_type
    d.kernel()(kernel)


for _type, (_slots, _formula, _body) in SPECIAL.items():
    _register(_type, _slots, _formula, _body)
