"""Draws parameterised by a tensor: bernoulli (X probabilities), poisson (X rates), standard_gamma (x shapes) and
multinomial (rows of X weights). Each uses the executor's generator; none has a gradient."""
from __future__ import annotations

from ..ir.proto.framework_pb2 import AttrType as A
from ..ir.registry import Attr, In, Out, register_op
from ._infer import same_as
from .creation import unit_draws


def _on_cpu(ctx):
    return ctx.place.kind == "cpu"


BERNOULLI = register_op("bernoulli", "Out = 1 with probability X, else 0, elementwise.",
                        inputs=[In("X", "probabilities in [0, 1]")], outputs=[Out("Out", "X's shape and dtype")],
                        infer_shape=same_as())


@BERNOULLI.kernel()
def bernoulli(ctx, ins, attrs):
    x = ins[0]
    return ((unit_draws(ctx, ctx.rng(0), x.shape) < x).astype(x.dtype),)


POISSON = register_op("poisson", "Out = a Poisson draw with rate X, elementwise.",
                      inputs=[In("X", "non-negative rates")], outputs=[Out("Out", "X's shape and dtype")],
                      infer_shape=same_as())


def poisson_by_search(xp, lam, u):
    """The inverse of the Poisson CDF at u: one step per count, every element at once (steps bounded by the largest
    rate plus ten standard deviations)."""
    count = xp.zeros(lam.shape, dtype=xp.float64)
    term = xp.exp(-lam)
    cdf = term.copy()
    top = float(lam.max()) if lam.size else 0.0
    for k in range(1, int(top + 10 * top ** 0.5 + 20)):
        beyond = u > cdf
        if not bool(beyond.any()):
            break
        count += beyond
        term = term * lam / k
        cdf += term
    return count


@POISSON.kernel()
def poisson(ctx, ins, attrs):
    xp = ctx.xp
    x = ins[0]
    lam = xp.where(x > 0, x, x.dtype.type(0)).astype(xp.float64)  # a rate at or below 0 (or NaN) draws 0
    return (poisson_by_search(xp, lam, unit_draws(ctx, ctx.rng(0), x.shape)).astype(x.dtype),)


STANDARD_GAMMA = register_op("standard_gamma", "out = a Gamma(x, 1) draw, elementwise.",
                             inputs=[In("x", "positive shapes")], outputs=[Out("out", "x's shape and dtype")],
                             infer_shape=same_as("x", "out"))


@STANDARD_GAMMA.kernel()
def standard_gamma(ctx, ins, attrs):
    xp = ctx.xp
    x = ins[0]
    rng = ctx.rng(0)
    valid = x > 0
    shape = xp.where(valid, x, x.dtype.type(1))  # no Gamma for a shape at or below 0: NaN there
    draws = rng.standard_gamma(shape) if _on_cpu(ctx) else rng.standard_gamma(shape, size=x.shape)
    return (xp.where(valid, draws, xp.nan).astype(x.dtype),)


MULTINOMIAL = register_op(
    "multinomial", "Out = num_samples category ids drawn from each row of X's weights (without replacement: "
                   "distinct ids, by Gumbel keys).",
    inputs=[In("X", "[C] or [B, C] non-negative weights")],
    outputs=[Out("Out", "[num_samples] or [B, num_samples], int64")],
    attrs=[Attr("num_samples", A.INT, "draws per row", 1), Attr("replacement", A.BOOLEAN, "ids may repeat", False)])


@MULTINOMIAL.kernel()
def multinomial(ctx, ins, attrs):
    xp = ctx.xp
    x = ins[0]
    rows = x.reshape(-1, x.shape[-1]).astype(xp.float64)
    k = attrs["num_samples"]
    if not attrs["replacement"] and k > x.shape[-1]:
        raise ValueError(f"multinomial: {k} samples without replacement from {x.shape[-1]} categories")
    rng = ctx.rng(0)
    if attrs["replacement"]:
        cdf = xp.cumsum(rows, axis=1)
        u = unit_draws(ctx, rng, (rows.shape[0], k)) * cdf[:, -1:]
        ids = xp.stack([xp.searchsorted(cdf[r], u[r], side="right") for r in range(rows.shape[0])])
        ids = xp.minimum(ids, x.shape[-1] - 1)
    else:
        u = unit_draws(ctx, rng, rows.shape)
        positive = rows > 0  # a zero weight is never drawn: its key is -inf
        gumbel = -xp.log(-xp.log(xp.maximum(u, 1e-300)))
        keys = xp.where(positive, xp.log(xp.where(positive, rows, 1.0)) + gumbel, -xp.inf)  # Gumbel-top-k
        ids = xp.argsort(-keys, axis=1)[:, :k]
    return (ids.astype(xp.int64).reshape(x.shape[:-1] + (k,)),)
