"""Arithmetic: elementwise binaries with Paddle's `axis` broadcasting, products and reductions."""
from __future__ import annotations

import math
import operator

import numpy as np

from ..ir import dtypes
from ..ir.proto.framework_pb2 import AttrType as A
from ..ir.proto.framework_pb2 import VarType as VT
from ..ir.registry import Attr, Check, In, Out, at_least, larger_than, register_op
from ..ir.shape_inference import broadcast_shapes, dims_match
from ._infer import check_same_dtype, elementwise, merge_dims, prod


def align(xp, x, y, axis: int):
    """Reshape the lower-rank operand so its dims line up with the other's from `axis`
    (Paddle's rule; -1 means trailing alignment, which is NumPy's own)."""
    if axis == -1 or x.ndim == y.ndim:
        return x, y
    # `axis` indexes the larger rank: bounded by it before it sizes anything ((1,) * 805306367 is gigabytes)
    diff = abs(x.ndim - y.ndim)
    if not 0 <= axis <= diff:
        _fail(f"axis {axis} does not fit X of rank {x.ndim} and Y of rank {y.ndim}: expected -1 or "
              f"0 <= axis <= {diff} (the rank difference)")
    if x.ndim > y.ndim:
        return x, y.reshape((1,) * axis + y.shape + (1,) * (x.ndim - axis - y.ndim))
    return x.reshape((1,) * axis + x.shape + (1,) * (y.ndim - axis - x.ndim)), y


# op type -> (formula, body, the array module's function for the same thing)
BINARY = {
    "elementwise_add": ("X + Y", operator.add, "add"),
    "elementwise_sub": ("X - Y", operator.sub, "subtract"),
    "elementwise_mul": ("X * Y", operator.mul, "multiply"),
    "elementwise_div": ("X / Y", operator.truediv, "true_divide"),
}


def _trailing_aligned(op) -> bool:
    """Whether the op's `axis` lines Y up with X's trailing dims (NumPy's own broadcasting), judged from
    the ranks the inputs are declared with when prepared."""
    axis = op.attrs["axis"]
    if axis == -1:
        return True
    x, y = op.in_shapes[:2]
    return x is not None and y is not None and (len(x) == len(y) or axis == len(x) - len(y))


def _binary_specializer(ufunc_name: str):
    """Prepared once: with trailing alignment the op is the array module's ufunc itself."""
    def make(op, xp):
        if not _trailing_aligned(op):
            return None
        return getattr(xp, ufunc_name)
    return make


def _binary_kernel(body):
    def kernel(ctx, ins, attrs):
        x, y = ins
        axis = attrs["axis"]
        if axis != -1:
            x, y = align(ctx.xp, x, y, axis)
        return (body(x, y),)
    return kernel


def register_elementwise_binary(op_type: str, formula: str, kernel):
    """Register `Out = formula` of X and Y with Paddle's `axis` broadcasting (the slots, attribute and shape
    rule every elementwise binary shares) and its kernel; returns the op's definition."""
    d = register_op(
        op_type, f"Out = {formula}, elementwise. Y is broadcast against X; its dims line up with X's "
                 f"starting at `axis` (-1: the trailing dims).",
        inputs=[In("X", "the first operand"), In("Y", "the second operand, broadcast to X")],
        outputs=[Out("Out", "the result, of the broadcast shape")],
        attrs=[Attr("axis", A.INT, "the dim of X where Y's dims start; -1 aligns trailing dims", -1)],
        infer_shape=elementwise)
    kernel.__name__ = op_type
    d.kernel()(kernel)
    return d


for _type, (_formula, _body, _ufunc) in BINARY.items():
    register_elementwise_binary(_type, _formula, _binary_kernel(_body)).specialize()(_binary_specializer(_ufunc))


def _fail(message: str):
    """Kernels meet the same contradictions shape inference reports when shapes were not declared."""
    raise ValueError(message)


# -- comparisons ---------------------------------------------------------------
def _infer_compare(ic):
    # Mixed integer dtypes (an int32 counter against an int64 bound) compare fine: no dtype check.
    # Paddle's own infer-shape ignores `axis` (trailing alignment) while its kernel honours it; kernelcore
    # honours it in both, like the elementwise ops.
    ic.set_output("Out", broadcast_shapes(ic.shape("X"), ic.shape("Y"), ic.attr("axis"), ic), VT.BOOL)


# op type -> (symbol, body): Paddle's compare family, one entry each
COMPARE = {
    "less_than": ("<", operator.lt, "less"), "less_equal": ("<=", operator.le, "less_equal"),
    "greater_than": (">", operator.gt, "greater"), "greater_equal": (">=", operator.ge, "greater_equal"),
    "equal": ("==", operator.eq, "equal"), "not_equal": ("!=", operator.ne, "not_equal"),
}


for _type, (_sym, _body, _ufunc) in COMPARE.items():
    _d = register_op(
        _type, f"Out = X {_sym} Y, elementwise, as bool. Y is broadcast against X like elementwise_add "
               f"(its dims line up with X's starting at `axis`; -1: the trailing dims).",
        inputs=[In("X", "the left operand"), In("Y", "the right operand, broadcast to X")],
        outputs=[Out("Out", "bool tensor of the broadcast shape")],
        attrs=[Attr("axis", A.INT, "the dim of X where Y's dims start; -1 aligns trailing dims", -1),
               Attr("force_cpu", A.BOOLEAN, "Paddle: keep Out in host memory. kernelcore ignores it: "
                    "Out lives where the op runs", False)],
        infer_shape=_infer_compare)
    _k = _binary_kernel(_body)  # same broadcasting as the arithmetic family
    _k.__name__ = _type
    _d.kernel()(_k)
    _d.specialize()(_binary_specializer(_ufunc))


# -- sums and scaling ----------------------------------------------------------
def _infer_sum(ic):
    shapes = ic.shapes("X")
    out, dt = shapes[0], ic.dtype("X", 0)
    for i, s in enumerate(shapes[1:], 1):
        if len(s) != len(out) or not all(dims_match(a, b) for a, b in zip(out, s)):
            ic.fail(f"X[{i}] has shape {list(s)} but X[0] has {list(shapes[0])}; every input must have "
                    f"the same shape")
        if ic.dtype("X", i) != dt:
            ic.fail(f"X[{i}] is {ic.dtype_name(ic.dtype('X', i))} but X[0] is {ic.dtype_name(dt)}; "
                    f"every input must have the same dtype")
        out = merge_dims(out, s)
    ic.set_output("Out", out, dt)


SUM = register_op(
    "sum", "Out = X[0] + X[1] + ... : the elementwise sum of one or more tensors of one shape and dtype.",
    inputs=[In("X", "the tensors to add, all of one shape and dtype", duplicable=True)],
    outputs=[Out("Out", "their sum, of the inputs' shape and dtype")],
    attrs=[Attr("onednn_data_type", A.STRING, "oneDNN hint (ignored)", "", extra=True)],
    infer_shape=_infer_sum)


@SUM.kernel()
def sum_(ctx, ins, attrs):
    xs = ins[0]
    if len(xs) == 1:
        return (xs[0].copy(),)
    out = xs[0] + xs[1]
    for v in xs[2:]:
        out += v  # `out` is a fresh array of ours: adding in place saves an allocation per input
    return (out,)


sum_.__name__ = "sum"


def _infer_scale(ic):
    ic.set_output("Out", ic.shape("X"), ic.dtype("X"))
    for slot in ("ScaleTensor", "BiasTensor"):
        if ic.has_input(slot) and prod(ic.shape(slot)) > 1:
            ic.fail(f"{slot} must hold exactly one value, got shape {list(ic.shape(slot))}")


SCALE = register_op(
    "scale", "Out = scale * X + bias (bias_after_scale) or scale * (X + bias). For integer X, scale and "
             "bias are first cast to X's dtype (truncated), as Paddle does.",
    inputs=[In("X", "the input tensor"),
            In("ScaleTensor", "a one-element tensor that, when given, replaces the `scale` attribute",
               dispensable=True),
            In("BiasTensor", "a one-element tensor that, when given, replaces the `bias` attribute "
               "(Paddle 3.x)", dispensable=True)],
    outputs=[Out("Out", "a tensor of X's shape and dtype")],
    attrs=[Attr("scale", A.FLOAT, "the factor", 1.0),
           Attr("bias", A.FLOAT, "the offset", 0.0),
           Attr("bias_after_scale", A.BOOLEAN, "true: scale * X + bias; false: scale * (X + bias)", True)],
    infer_shape=_infer_scale)


def _one_value(t, dtype, slot: str):
    if t.size != 1:
        raise ValueError(f"{slot} must hold exactly one value, got shape {list(t.shape)}")
    return t.reshape(()).astype(dtype, copy=False)  # stays on the device; no host round trip


@SCALE.kernel()
def scale(ctx, ins, attrs):
    x, st, bt = ins
    s = attrs["scale"] if st is None else _one_value(st, x.dtype, "ScaleTensor")
    b = attrs["bias"] if bt is None else _one_value(bt, x.dtype, "BiasTensor")
    if x.dtype.kind in "iu":  # Paddle casts the attributes to T: static_cast truncates toward zero
        s = int(s) if st is None else s
        b = int(b) if bt is None else b
    # Python floats are "weak" scalars: float32 X stays float32.
    return (x * s + b if attrs["bias_after_scale"] else (x + b) * s,)


@SCALE.specialize()
def _scale_prepared(op, xp):
    """scale with attribute operands and a known dtype: the factor and offset cast once to X's dtype
    (truncated for integers, as Paddle does), and a factor of 1 or an offset of 0 left out."""
    if len(op.in_names) != 1 or op.in_dtypes[0] is None or op.in_dtypes[0].kind not in "fiu":
        return None  # ScaleTensor/BiasTensor given, or X's dtype unknown: the plain kernel
    dt = op.in_dtypes[0]
    s, b = op.attrs["scale"], op.attrs["bias"]
    try:
        s, b = (dt.type(int(s)), dt.type(int(b))) if dt.kind in "iu" else (dt.type(s), dt.type(b))
    except (OverflowError, ValueError):
        return None  # the plain kernel reports it
    mul, add = xp.multiply, xp.add
    if b == 0:
        return (lambda x: mul(x, s)) if s != 1 else (lambda x: x.copy())
    if s == 1:
        return lambda x: add(x, b)
    if op.attrs["bias_after_scale"]:
        return lambda x: add(mul(x, s), b)
    return lambda x: mul(add(x, b), s)


# -- products ------------------------------------------------------------------
def _infer_mul(ic):
    x, y = ic.shape("X"), ic.shape("Y")
    xn, yn = ic.attr("x_num_col_dims"), ic.attr("y_num_col_dims")
    if xn >= len(x) or yn >= len(y):
        slot, n, s = ("X", xn, x) if xn >= len(x) else ("Y", yn, y)
        ic.fail(f"{slot.lower()}_num_col_dims is {n} but {slot} {list(s)} has rank {len(s)}; expected "
                f"{slot.lower()}_num_col_dims < rank so {slot} flattens to a matrix")
    x_h, x_w, y_h, y_w = prod(x[:xn]), prod(x[xn:]), prod(y[:yn]), prod(y[yn:])
    if not dims_match(x_w, y_h):
        ic.fail(f"X {list(x)} flattens (x_num_col_dims={xn}) to [{x_h}, {x_w}] and Y {list(y)} "
                f"(y_num_col_dims={yn}) to [{y_h}, {y_w}]: X's width {x_w} must equal Y's height {y_h}")
    check_same_dtype(ic)
    ic.set_output("Out", tuple(x[:xn]) + tuple(y[yn:]), ic.dtype("X"))


MUL = register_op(
    "mul", "Out = X * Y as matrices: X is flattened to 2-D at x_num_col_dims (rows: the product of its "
           "first x_num_col_dims dims; columns: the rest), Y likewise at y_num_col_dims; Out has shape "
           "X.shape[:x_num_col_dims] + Y.shape[y_num_col_dims:]. `fc` layers write this op.",
    inputs=[In("X", "the left operand, rank >= 2 after flattening"), In("Y", "the right operand (weights)")],
    outputs=[Out("Out", "the product, of shape X.shape[:x_num_col_dims] + Y.shape[y_num_col_dims:]")],
    attrs=[Attr("x_num_col_dims", A.INT, "how many leading dims of X form the rows of its matrix", 1,
                checks=(at_least(1),)),
           Attr("y_num_col_dims", A.INT, "how many leading dims of Y form the rows of its matrix", 1,
                checks=(at_least(1),)),
           # quantization attributes Paddle may write (clip_extra=False); they change nothing here
           Attr("scale_x", A.FLOAT, "int8 quantization scale of X (ignored)", 1.0, extra=True),
           Attr("scale_y", A.FLOATS, "int8 quantization scales of Y (ignored)", [1.0], extra=True),
           Attr("scale_out", A.FLOAT, "int8 quantization scale of Out (ignored)", 1.0, extra=True),
           Attr("force_fp32_output", A.BOOLEAN, "int8 hint (ignored)", False, extra=True)],
    infer_shape=_infer_mul)


def matmul_whole(xp, a, b):
    """xp.matmul(a, b): the reference kernels' products (kernelcore/native/matmul.py's variants split them)."""
    return xp.matmul(a, b)


def mul_kernel(matmul):
    """mul's kernel, its product `matmul(xp, a, b)`'s."""
    def mul(ctx, ins, attrs):
        return _mul(ctx, ins, attrs, matmul)
    return mul


def _mul(ctx, ins, attrs, matmul):
    x, y = ins
    xn, yn = attrs["x_num_col_dims"], attrs["y_num_col_dims"]
    if xn == 1 and yn == 1 and x.ndim == 2 and y.ndim == 2 and x.shape[1] == y.shape[0]:
        return (matmul(ctx.xp, x, y),)  # the fc layer's case: nothing to flatten
    if xn >= x.ndim or yn >= y.ndim:
        _fail(f"x_num_col_dims={xn}, y_num_col_dims={yn} must be below the ranks of X {list(x.shape)} "
              f"and Y {list(y.shape)}")
    x2 = x.reshape(math.prod(x.shape[:xn]), math.prod(x.shape[xn:]))
    y2 = y.reshape(math.prod(y.shape[:yn]), math.prod(y.shape[yn:]))
    if x2.shape[1] != y2.shape[0]:
        _fail(f"X {list(x.shape)} flattens to {list(x2.shape)} and Y {list(y.shape)} to {list(y2.shape)}: "
              f"X's width must equal Y's height")
    return (matmul(ctx.xp, x2, y2).reshape(x.shape[:xn] + y.shape[yn:]),)


MUL.kernel()(mul_kernel(matmul_whole))


def _matmul_dims(x, y, tx: bool, ty: bool, fail):
    """paddle.matmul's shape rule: 1-D X is a row [1, K] and 1-D Y a column [K, 1] (their trans flag
    is ignored), those added dims are dropped from Out; the batch dims broadcast like NumPy's."""
    if not x or not y:
        fail(f"X {list(x)} and Y {list(y)}: both operands need rank >= 1")
    x, y = list(x), list(y)
    if len(x) >= 2 and tx:
        x[-2], x[-1] = x[-1], x[-2]
    if len(y) >= 2 and ty:
        y[-2], y[-1] = y[-1], y[-2]
    xm = [1] + x if len(x) == 1 else x
    ym = y + [1] if len(y) == 1 else y
    if not dims_match(xm[-1], ym[-2]):
        fail(f"X {list(x)} (trans_x={tx}) contracts dim of size {xm[-1]} against Y {list(y)} "
             f"(trans_y={ty}) dim of size {ym[-2]}; expected them equal")
    bx, by = xm[:-2], ym[:-2]
    n = max(len(bx), len(by))
    bx, by = [1] * (n - len(bx)) + bx, [1] * (n - len(by)) + by
    batch = []
    for a, b in zip(bx, by):
        if a == 1 or b == 1 or a == b:
            batch.append(b if a == 1 else a)
        elif a < 0 or b < 0:
            batch.append(a if b < 0 and a > 1 else b if a < 0 and b > 1 else -1)
        else:
            fail(f"batch dims of X {list(x)} and Y {list(y)} do not broadcast: {a} versus {b}")
    return batch + ([xm[-2]] if len(x) > 1 else []) + ([ym[-1]] if len(y) > 1 else [])


def _infer_matmul_v2(ic):
    check_same_dtype(ic)
    out = _matmul_dims(ic.shape("X"), ic.shape("Y"), ic.attr("trans_x"), ic.attr("trans_y"), ic.fail)
    ic.set_output("Out", out, ic.dtype("X"))


MATMUL_V2 = register_op(
    "matmul_v2", "Out = op(X) @ op(Y) with paddle.matmul's rules: op transposes the last two dims when "
                 "trans_x / trans_y is set; a 1-D X acts as a row and a 1-D Y as a column (the added dim "
                 "is dropped from Out, so 1-D @ 1-D gives a 0-d tensor); leading batch dims broadcast.",
    inputs=[In("X", "the left operand, rank >= 1"), In("Y", "the right operand, rank >= 1")],
    outputs=[Out("Out", "the product: broadcast batch dims + [M] + [N]")],
    attrs=[Attr("trans_x", A.BOOLEAN, "transpose the last two dims of X first (no effect on 1-D X)", False),
           Attr("trans_y", A.BOOLEAN, "transpose the last two dims of Y first (no effect on 1-D Y)", False),
           Attr("force_fp32_output", A.BOOLEAN, "oneDNN int8 hint (ignored)", False, extra=True),
           Attr("onednn_data_type", A.STRING, "oneDNN hint (ignored)", "", extra=True)],
    infer_shape=_infer_matmul_v2)


def matmul_v2_kernel(matmul):
    """matmul_v2's kernel, its product `matmul(xp, a, b)`'s."""
    def matmul_v2(ctx, ins, attrs):
        return _matmul_v2(ctx, ins, attrs, matmul)
    return matmul_v2


def _matmul_v2(ctx, ins, attrs, matmul):
    xp = ctx.xp
    x, y = ins
    _matmul_dims(x.shape, y.shape, attrs["trans_x"], attrs["trans_y"], _fail)  # Paddle's wording on mismatch
    if attrs["trans_x"] and x.ndim >= 2:
        x = xp.swapaxes(x, -1, -2)
    if attrs["trans_y"] and y.ndim >= 2:
        y = xp.swapaxes(y, -1, -2)
    return (xp.asarray(matmul(xp, x, y)),)  # NumPy gives a scalar for 1-D @ 1-D; keep it an array


MATMUL_V2.kernel()(matmul_v2_kernel(matmul_whole))


def _infer_cosine(ic):
    a, b = ic.shape("a"), ic.shape("b")
    if len(a) != 2 or len(b) != 2:
        ic.fail(f"a {list(a)} and b {list(b)} must both be 2-D (rows of vectors)")
    if not all(dims_match(p, q) for p, q in zip(a, b)):
        ic.fail(f"a {list(a)} and b {list(b)} must have the same shape")
    check_same_dtype(ic, ("a", "b"))
    ic.set_output("output", (merge_dims(a, b)[0], 1), ic.dtype("a"))


COSINE = register_op(
    "cosine", "The cosine op of the registry design (seed 003): output[i] = scale * cos(a[i], b[i]) = "
              "scale * <a[i], b[i]> / (|a[i]| |b[i]|), row by row. A row of zeros has no direction: its "
              "output is NaN.",
    inputs=[In("a", "the first input of cosine op: [N, D]"), In("b", "the second input of cosine op: [N, D]")],
    outputs=[Out("output", "the output of cosine op: [N, 1]")],
    attrs=[Attr("scale", A.FLOAT, "the scale of cosine op", 1.0, checks=(larger_than(0.0),))],
    infer_shape=_infer_cosine)


@COSINE.kernel()
def cosine(ctx, ins, attrs):
    xp = ctx.xp
    a, b = ins
    if a.ndim != 2 or a.shape != b.shape:
        _fail(f"a {list(a.shape)} and b {list(b.shape)} must be 2-D and of the same shape")
    dot = (a * b).sum(axis=1, keepdims=True)
    norms = xp.sqrt((a * a).sum(axis=1, keepdims=True) * (b * b).sum(axis=1, keepdims=True))
    return (attrs["scale"] * dot / norms,)


# -- reductions ----------------------------------------------------------------
# NumPy's own sum along or across short rows walks them one at a time; a matrix-vector product with ones runs along
# them in the BLAS. float32: [8, 4, 128, 128] along its rows 128 us, this 47 (einsum 51); [1024, 32] across its rows
# 17 us, this 4 (einsum 7). Only float32/64: NumPy's sum widens int32 and float16 accumulators, a product keeps the
# dtype.
SUM_BY_PRODUCT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def row_sums(xp, a):
    """sum(a) along its last axis, that axis kept (size 1)."""
    if a.ndim and a.dtype in SUM_BY_PRODUCT_DTYPES:
        return (a @ xp.ones(a.shape[-1], dtype=a.dtype))[..., None]
    return a.sum(axis=-1, keepdims=True)


def leading_sums(xp, a, lead: int):
    """sum(a) over its first `lead` axes, dropped."""
    if 0 < lead < a.ndim and a.dtype in SUM_BY_PRODUCT_DTYPES:
        rows = a.reshape(math.prod(a.shape[:lead]), math.prod(a.shape[lead:]))  # not -1: a may be empty
        return (xp.ones(rows.shape[0], dtype=a.dtype) @ rows).reshape(a.shape[lead:])
    return a.sum(axis=tuple(range(lead)))


def reduce_axes(dims, ndim: int, reduce_all: bool, fail) -> tuple[int, ...]:
    """The dims a reduce_* op reduces. Paddle reduces every dim when reduce_all is set, when `dim` is
    empty, and for a 0-d X (where `dim` [0] is accepted)."""
    if reduce_all or not dims or ndim == 0:
        return tuple(range(ndim))
    out = []
    for d in dims:
        if not -ndim <= d < ndim:
            fail(f"dim {d} is out of range for X of rank {ndim}; expected -{ndim} <= dim < {ndim}")
        d = d + ndim if d < 0 else d
        if d in out:
            fail(f"dim {list(dims)} names dimension {d} more than once")
        out.append(d)
    return tuple(sorted(out))


def _reduced_shape(shape, axes, keep_dim: bool) -> tuple[int, ...]:
    if keep_dim:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _valid_dtype(v: int) -> bool:
    try:
        dtypes.to_numpy(v)
        return True
    except TypeError:
        return False


def _reduce_attrs(what: str):
    return [
        Attr("dim", A.INTS, f"the dims to {what} over, each in [-rank, rank); empty: all of them", [0]),
        Attr("keep_dim", A.BOOLEAN, "keep each reduced dim as a dim of size 1", False),
        Attr("reduce_all", A.BOOLEAN, "reduce over every dim (Out is 0-d unless keep_dim)", False),
        Attr("in_dtype", A.INT, "Paddle internal: the input's dtype before a cast; -1. Ignored", -1),
        Attr("out_dtype", A.INT, "the output's VarType data type; -1: see the op's comment", -1,
             checks=(Check("-1 or a tensor data type", lambda v: v == -1 or _valid_dtype(v)),)),
    ]


def _sum_out_dtype(x_dtype: int, out_dtype: int) -> int:
    if out_dtype != -1:
        return out_dtype
    return VT.INT64 if x_dtype in (VT.BOOL, VT.INT32) else x_dtype  # Paddle's SumInferMeta


def _infer_reduce(out_dtype_of):
    def infer(ic):
        x = ic.shape("X")
        axes = reduce_axes(ic.attr("dim"), len(x), ic.attr("reduce_all"), ic.fail)
        ic.set_output("Out", _reduced_shape(x, axes, ic.attr("keep_dim")),
                      out_dtype_of(ic.dtype("X"), ic.attr("out_dtype")))
    return infer


REDUCE_SUM = register_op(
    "reduce_sum", "Out = the sum of X over `dim`. Out's dtype is `out_dtype` when set; otherwise X's, "
                  "except that bool and int32 X sum to int64 (as in Paddle).",
    inputs=[In("X", "the input tensor")], outputs=[Out("Out", "the sums")],
    attrs=_reduce_attrs("sum") + [Attr("onednn_data_type", A.STRING, "oneDNN hint (ignored)", "", extra=True)],
    infer_shape=_infer_reduce(_sum_out_dtype))


@REDUCE_SUM.kernel()
def reduce_sum(ctx, ins, attrs):
    x = ins[0]
    axes = reduce_axes(attrs["dim"], x.ndim, attrs["reduce_all"], _fail)
    dt = dtypes.to_numpy(_sum_out_dtype(dtypes.from_numpy(x.dtype), attrs["out_dtype"]))
    return (ctx.xp.asarray(x.sum(axis=axes, dtype=dt, keepdims=attrs["keep_dim"])),)


def mean_of(xp, x, axes, keepdims: bool):
    """The mean over `axes`. Integer X gives an integer mean truncated toward zero, as Paddle's
    integer kernels do (they divide with C++ integer division)."""
    if x.dtype.kind in "fc":
        return xp.asarray(x.mean(axis=axes, keepdims=keepdims))
    n = math.prod(x.shape[a] for a in axes)
    s = x.sum(axis=axes, dtype=xp.int64, keepdims=keepdims)
    return xp.asarray((xp.abs(s) // max(n, 1)) * xp.sign(s)).astype(x.dtype)


REDUCE_MEAN = register_op(
    "reduce_mean", "Out = the mean of X over `dim`, of X's dtype. Paddle ignores `out_dtype` for this op "
                   "and so does kernelcore. `paddle.mean(x)` writes it with reduce_all=true.",
    inputs=[In("X", "the input tensor")], outputs=[Out("Out", "the means")],
    attrs=_reduce_attrs("average"),
    infer_shape=_infer_reduce(lambda x_dtype, out_dtype: x_dtype))


@REDUCE_MEAN.kernel()
def reduce_mean(ctx, ins, attrs):
    x = ins[0]
    axes = reduce_axes(attrs["dim"], x.ndim, attrs["reduce_all"], _fail)
    return (mean_of(ctx.xp, x, axes, attrs["keep_dim"]),)


MEAN = register_op(
    "mean", "Out = the mean of all elements of X, a 0-d tensor (Paddle >= 2.5 writes shape []; older "
            "releases wrote [1]).",
    inputs=[In("X", "the input tensor")], outputs=[Out("Out", "the mean, 0-d, of X's dtype")],
    infer_shape=lambda ic: ic.set_output("Out", (), ic.dtype("X")))


@MEAN.kernel()
def mean(ctx, ins, attrs):
    x = ins[0]
    return (mean_of(ctx.xp, x, tuple(range(x.ndim)), False),)
