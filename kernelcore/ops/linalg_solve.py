"""Determinants, solves and factorisations of batched square matrices (the last two dims): determinant,
slogdeterminant, solve, triangular_solve, cholesky, cholesky_solve, matrix_power and multi_dot."""
from __future__ import annotations

from ..ir.proto.framework_pb2 import AttrType as A
from ..ir.registry import Attr, In, Out, register_op


def square(a, op_type):
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"{op_type} takes square matrices [..., N, N], got {list(a.shape)}")
    return a


def t(m):
    return m.swapaxes(-1, -2)


DETERMINANT = register_op("determinant", "Out = det(Input) per matrix.", inputs=[In("Input", "[..., N, N]")],
                          outputs=[Out("Out", "[...], Input's dtype")])
SLOGDET = register_op("slogdeterminant", "Out = [sign(det(Input)), log|det(Input)|], stacked first.",
                      inputs=[In("Input", "[..., N, N]")], outputs=[Out("Out", "[2, ...], Input's dtype")])


@DETERMINANT.kernel()
def determinant(ctx, ins, attrs):
    return (ctx.xp.linalg.det(square(ins[0], "determinant")),)


@SLOGDET.kernel()
def slogdeterminant(ctx, ins, attrs):
    # asarray: a no-op on CuPy's pair; the strict stand-in hands the pair's parts back as host arrays
    sign, logabs = (ctx.xp.asarray(v) for v in ctx.xp.linalg.slogdet(square(ins[0], "slogdeterminant")))
    return (ctx.xp.stack([sign.astype(logabs.dtype), logabs]),)


SOLVE = register_op("solve", "Out = X^-1 Y (Y a matrix [..., N, K] or a vector [N]).",
                    inputs=[In("X", "[..., N, N]"), In("Y", "[..., N, K] or [N]")],
                    outputs=[Out("Out", "Y's shape (batch dims broadcast)")])


def as_matrix(y):
    return y[:, None] if y.ndim == 1 else y


def solve_of(xp, a, y):
    """X^-1 Y with Paddle's shapes: a 1-D Y is a vector, batch dims broadcast."""
    b = as_matrix(y)
    shape = xp.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    out = xp.linalg.solve(xp.broadcast_to(a, shape + a.shape[-2:]), xp.broadcast_to(b, shape + b.shape[-2:]))
    return out[..., 0] if y.ndim == 1 else out


@SOLVE.kernel()
def solve(ctx, ins, attrs):
    x, y = ins
    return (solve_of(ctx.xp, square(x, "solve"), y),)


TRIANGULAR_SOLVE = register_op(
    "triangular_solve", "Out = op(X)^-1 Y, op(X) X's upper (or lower) triangle, transposed with `transpose`, its "
                        "diagonal taken as 1 with `unitriangular`.",
    inputs=[In("X", "[..., N, N], only its triangle read"), In("Y", "[..., N, K]")],
    outputs=[Out("Out", "[..., N, K]")],
    attrs=[Attr("upper", A.BOOLEAN, "use the upper triangle", True),
           Attr("transpose", A.BOOLEAN, "solve with the triangle transposed", False),
           Attr("unitriangular", A.BOOLEAN, "the diagonal is 1", False)])


def triangle_mask(xp, n, upper: bool, unit: bool, dtype):
    m = xp.triu(xp.ones((n, n), dtype=dtype)) if upper else xp.tril(xp.ones((n, n), dtype=dtype))
    return m - xp.eye(n, dtype=dtype) if unit else m


def triangular_matrix(xp, x, attrs):
    """op(X) of triangular_solve as a full matrix."""
    n = x.shape[-1]
    a = x * triangle_mask(xp, n, attrs["upper"], attrs["unitriangular"], x.dtype)
    if attrs["unitriangular"]:
        a = a + xp.eye(n, dtype=x.dtype)
    return t(a) if attrs["transpose"] else a


@TRIANGULAR_SOLVE.kernel()
def triangular_solve(ctx, ins, attrs):
    xp = ctx.xp
    x, y = ins
    a = triangular_matrix(xp, square(x, "triangular_solve"), attrs)
    return (xp.linalg.solve(xp.broadcast_to(a, xp.broadcast_shapes(a.shape[:-2], y.shape[:-2]) + a.shape[-2:]),
                            xp.broadcast_to(y, xp.broadcast_shapes(a.shape[:-2], y.shape[:-2]) + y.shape[-2:])),)


CHOLESKY = register_op("cholesky", "Out = L with X = L L^T (lower), or U = L^T with `upper`.",
                       inputs=[In("X", "[..., N, N] symmetric positive definite")],
                       outputs=[Out("Out", "X's shape")], attrs=[Attr("upper", A.BOOLEAN, "return U = L^T", False)])


@CHOLESKY.kernel()
def cholesky(ctx, ins, attrs):
    low = ctx.xp.linalg.cholesky(square(ins[0], "cholesky"))
    return (t(low).copy() if attrs["upper"] else low,)


CHOLESKY_SOLVE = register_op(
    "cholesky_solve", "Out = A^-1 X with A = Y Y^T (Y lower) or Y^T Y (`upper`): a solve with a Cholesky factor.",
    inputs=[In("X", "[..., N, K] the right-hand sides"), In("Y", "[..., N, N] the factor, only its triangle read")],
    outputs=[Out("Out", "X's shape")], attrs=[Attr("upper", A.BOOLEAN, "Y is upper triangular", False)])


def factor_product(xp, y, upper: bool):
    f = xp.triu(y) if upper else xp.tril(y)
    return xp.matmul(t(f), f) if upper else xp.matmul(f, t(f))


@CHOLESKY_SOLVE.kernel()
def cholesky_solve(ctx, ins, attrs):
    xp = ctx.xp
    b, y = ins
    a = factor_product(xp, square(y, "cholesky_solve"), attrs["upper"])
    shape = xp.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    return (xp.linalg.solve(xp.broadcast_to(a, shape + a.shape[-2:]), xp.broadcast_to(b, shape + b.shape[-2:])),)


MATRIX_POWER = register_op("matrix_power", "Out = X^n (n < 0: the inverse's power; n = 0: the identity).",
                           inputs=[In("X", "[..., N, N]")], outputs=[Out("Out", "X's shape")],
                           attrs=[Attr("n", A.INT, "the exponent")])


def power_of(xp, x, n):
    out = xp.broadcast_to(xp.eye(x.shape[-1], dtype=x.dtype), x.shape).copy()
    for _ in range(n):
        out = xp.matmul(out, x)
    return out


@MATRIX_POWER.kernel()
def matrix_power(ctx, ins, attrs):
    xp = ctx.xp
    x = square(ins[0], "matrix_power")
    n = attrs["n"]
    return (power_of(xp, xp.linalg.inv(x) if n < 0 else x, abs(n)),)


MULTI_DOT = register_op("multi_dot", "Out = X[0] @ X[1] @ ... (the first may be a row vector, the last a column).",
                        inputs=[In("X", "the matrices", duplicable=True)], outputs=[Out("Out", "the product")])


def as_chain(xs):
    """The operands as matrices: a 1-D first as a row, a 1-D last as a column."""
    ms = list(xs)
    ms[0] = ms[0][None, :] if ms[0].ndim == 1 else ms[0]
    ms[-1] = ms[-1][:, None] if ms[-1].ndim == 1 else ms[-1]
    return ms


def chain_shape(xs, out):
    """The product's shape once the vector ends' dims are dropped."""
    if xs[0].ndim == 1:
        out = out[0]
    if xs[-1].ndim == 1:
        out = out[..., 0]
    return out


@MULTI_DOT.kernel()
def multi_dot(ctx, ins, attrs):
    xs = ins[0]
    if len(xs) < 2:
        raise ValueError("multi_dot takes at least 2 tensors")
    ms = as_chain(xs)
    out = ms[0]
    for m in ms[1:]:
        out = ctx.xp.matmul(out, m)
    return (chain_shape(xs, out),)
