"""Tensor plumbing: feed/fetch, constants and random initialisers, casts, reshapes, joins.

Shape-like inputs (ShapeTensor, AxisTensor, SectionsTensorList, ...) are small integer tensors read on
the host when the op runs; Paddle gives them priority over the matching attribute, and so do we.
"""
from __future__ import annotations

import math

import numpy as np

from ..ir import dtypes
from ..runtime.place import to_host
from ..ir.proto.framework_pb2 import AttrType as A
from ..ir.registry import Attr, Check, In, Out, at_least, register_op
from ._infer import normalize_axis, same_as

VT = dtypes.VT

# A feed/fetch column indexes a list the executor builds with one slot per column: a hostile `col`
# (2**31 - 1) would ask for gigabytes of list. Paddle's programs number their columns 0, 1, ...
MAX_COL = 65_535
COL_BOUND = Check(f"<= {MAX_COL} (kernelcore's bound on feed/fetch columns)", lambda v: v <= MAX_COL)

FEED = register_op(
    "feed", "Copies column `col` of the feed list (the FEED_MINIBATCH variable the executor fills) to Out.",
    inputs=[In("X", "the feed list")], outputs=[Out("Out", "the fed tensor")],
    attrs=[Attr("col", A.INT, "which column of the feed list", 0, checks=(at_least(0), COL_BOUND))])


@FEED.kernel()
def feed(ctx, ins, attrs):
    lst, col = ins[0], attrs["col"]
    if lst is None or col >= len(lst) or lst[col] is None:
        raise ValueError(f"the feed list has no column {col}: feed this program's inputs by name")
    return (lst[col],)


FETCH = register_op(
    "fetch", "Stores X in column `col` of the fetch list (a FETCH_LIST variable) the executor returns.",
    inputs=[In("X", "the tensor to fetch")], outputs=[Out("Out", "the fetch list")],
    attrs=[Attr("col", A.INT, "which column of the fetch list", 0, checks=(at_least(0), COL_BOUND))])


@FETCH.kernel()
def fetch(ctx, ins, attrs):
    current = ctx.output_var("Out").value
    lst = list(current) if current else []  # a new list: kernels don't mutate
    col = attrs["col"]
    lst.extend([None] * (col + 1 - len(lst)))
    lst[col] = ins[0]
    return (lst,)


# ===========================================================================
# Shared pieces
# ===========================================================================
def _numpy_ok(v) -> bool:
    try:
        dtypes.to_numpy(v)
        return True
    except TypeError:
        return False


# dtype attributes hold VarType.Type values (Paddle writes ints, e.g. 5 for float32).
NUMPY_DTYPE = Check("a VarType value with a NumPy dtype (0 bool, 1 int16, 2 int32, 3 int64, 4 float16, "
                    "5 float32, 6 float64, 20 uint8, 21 int8, 23 complex64, 24 complex128)", _numpy_ok)
# Paddle registers its random kernels for floating types only (an int dtype has "no kernel").
RANDOM_DTYPE = Check("a floating VarType value: 4 (float16), 5 (float32) or 6 (float64)",
                     lambda v: v in (VT.FP16, VT.FP32, VT.FP64))


def _attr(ic, name, default):
    """An attribute from the desc, or its default when a loaded program left it out."""
    v = ic.attr(name)
    return default if v is None else v


def host_ints(t) -> list[int]:
    """The values of a small integer tensor (ShapeTensor, AxisTensor, ...) as Python ints."""
    return [int(v) for v in np.asarray(to_host(t)).reshape(-1)]


def one_int(t, what: str) -> int:
    vals = host_ints(t)
    if len(vals) != 1:
        raise ValueError(f"{what} must hold one integer, got {len(vals)} values")
    return vals[0]


def ints_operand(tensor_list, tensor, attr_value, list_slot: str) -> list:
    """Integers an op takes as one-element tensors (`list_slot`), else as a 1-D tensor, else as its attribute:
    the priority of reshape2's ShapeTensor / Shape, expand_v2's, tile's and unsqueeze2's (a list given wins)."""
    if tensor_list:
        return [one_int(t, f"each {list_slot} entry") for t in tensor_list]
    if tensor is not None:
        return host_ints(tensor)
    return attr_value


# -- shapes given by attribute or by tensor (fill_constant, uniform_random, gaussian_random) --------
SHAPE_TENSOR_SLOTS = [
    In("ShapeTensor", "(1-D int32/int64 tensor) the output's shape; overrides `shape`", dispensable=True),
    In("ShapeTensorList", "(1-element int tensors) the output's dims one by one; overrides `shape` "
       "(ShapeTensor wins when both are given)", duplicable=True, dispensable=True),
]


def _shape_from_inputs(shape_tensor, shape_list, attr_shape) -> list[int]:
    """Paddle's priority: ShapeTensor > ShapeTensorList > attr `shape`."""
    if shape_tensor is not None:
        shape = host_ints(shape_tensor)
    elif shape_list:
        shape = [one_int(t, "each ShapeTensorList entry") for t in shape_list]
    else:
        shape = list(attr_shape)
    bad = [d for d in shape if d < 0]
    if bad:
        raise ValueError(f"every dim of the output shape must be >= 0, got {shape}")
    check_new_shape(shape)
    return shape


# Ops that make a tensor from a shape attribute (fill_constant, the random initialisers) would otherwise
# allocate whatever a file asks for (a [100000, 100000] fill is 40 GB).
MAX_NEW_ELEMENTS = 1 << 30


def check_new_shape(shape) -> None:
    """ValueError (the executor names the op) for a shape of more than MAX_NEW_ELEMENTS elements."""
    n = math.prod(int(d) for d in shape)
    if n > MAX_NEW_ELEMENTS:
        raise ValueError(f"the output shape {list(shape)} has {n} elements; kernelcore makes tensors of at most "
                         f"{MAX_NEW_ELEMENTS} elements from a shape attribute or tensor")


def _infer_given_shape(ic) -> list[int] | None:
    """The output shape at append time: the attribute, or -1 dims whose count the shape tensors tell
    (None: not even the rank is known yet)."""
    attr_shape = list(_attr(ic, "shape", []))
    if ic.has_input("ShapeTensor"):
        st = ic.shape("ShapeTensor")
        if len(st) != 1:
            ic.fail(f"ShapeTensor must be 1-D, got shape {list(st)}")
        return [-1] * st[0] if st[0] >= 0 else None
    n = len(ic.input_names("ShapeTensorList"))
    if n:
        # Paddle writes the known dims into `shape` and -1 for those the tensors give.
        if len(attr_shape) == n:
            return [d if d >= 0 else -1 for d in attr_shape]
        return [-1] * n
    for i, d in enumerate(attr_shape):
        if d < 0:
            ic.fail(f"shape {attr_shape}: dim {i} is {d}; every dim must be >= 0 "
                    f"(give ShapeTensor/ShapeTensorList for dims known only at run time)")
    return attr_shape


# ===========================================================================
# Constants and random initialisers
# ===========================================================================
FILL_CONSTANT = register_op(
    "fill_constant",
    "Out = a tensor of `shape` and `dtype` with every element equal to the value. The value comes from "
    "ValueTensor if given, else from `str_value` if non-empty (parsed as a double, so 'inf', '-inf', "
    "'nan' and '1e3' work; integer dtypes truncate it toward zero like a C cast), else from `value`.",
    inputs=[In("ValueTensor", "(1-element tensor) the fill value; overrides str_value and value",
               dispensable=True), *SHAPE_TENSOR_SLOTS],
    outputs=[Out("Out", "the filled tensor")],
    attrs=[Attr("dtype", A.INT, "(VarType) the output's data type; default 5 = float32", VT.FP32,
                checks=(NUMPY_DTYPE,)),
           Attr("shape", A.LONGS, "the output's shape; [] gives a 0-d tensor", []),
           Attr("value", A.FLOAT, "the fill value (a float32 attribute)", 0.0),
           Attr("str_value", A.STRING, "the fill value as text; used when non-empty (keeps float64 "
                "precision that `value` loses)", ""),
           Attr("force_cpu", A.BOOLEAN, "Paddle: keep Out in host memory. kernelcore keeps every value on "
                "the executor's place and ignores it", False),
           Attr("place_type", A.INT, "Paddle: where Out lives (-1 executor's choice). Ignored, as force_cpu",
                -1)])


def _fill_constant_infer(ic):
    shape = _infer_given_shape(ic)
    if shape is not None:
        ic.set_output("Out", shape, _attr(ic, "dtype", VT.FP32))


FILL_CONSTANT.infer_shape = _fill_constant_infer


def _fill_scalar(value: float, dt: np.dtype):
    """The Python scalar a C++ static_cast<T>(double) would give (integers truncate toward zero)."""
    if dt.kind == "b":
        return bool(value)
    if dt.kind in "iu":
        if not math.isfinite(value):
            raise ValueError(f"cannot fill an {dt} tensor with {value}")
        return int(value)
    return value


@FILL_CONSTANT.kernel()
def fill_constant(ctx, ins, attrs):
    value_tensor, shape_tensor, shape_list = ins
    xp = ctx.xp
    dt = dtypes.to_numpy(attrs["dtype"])
    shape = tuple(_shape_from_inputs(shape_tensor, shape_list, attrs["shape"]))
    if value_tensor is not None:
        if value_tensor.size != 1:
            raise ValueError(f"ValueTensor must hold one value, got shape {list(value_tensor.shape)}")
        # cast on the device (no host round trip); astype truncates floats like a C cast
        return (xp.broadcast_to(value_tensor.reshape(()).astype(dt), shape).copy(),)
    value = float(attrs["str_value"]) if attrs["str_value"] else attrs["value"]
    return (xp.full(shape, _fill_scalar(value, dt), dtype=dt),)


RANDOM_SHAPE_ATTRS = [Attr("shape", A.LONGS, "the output's shape", []),
                      Attr("seed", A.INT, "0: draw from the executor's generator (Executor.seed); "
                           "else a generator seeded with this value, so every run gives the same tensor", 0),
                      Attr("dtype", A.INT, "(VarType) a floating output type; default 5 = float32", VT.FP32,
                           checks=(RANDOM_DTYPE,))]


def _random_infer(ic):
    shape = _infer_given_shape(ic)
    if shape is not None:
        ic.set_output("Out", shape, _attr(ic, "dtype", VT.FP32))


def _draw(ctx, rng, kind: str, shape, dt: np.dtype):
    """Unit draws of `dt` from either API: NumPy's Generator (CPU) or CuPy's RandomState (GPU).
    Both generate float32 or float64; float16 is drawn as float32 and rounded."""
    gen_dt = dt if dt in (np.float32, np.float64) else np.dtype(np.float32)
    if ctx.place.kind == "cpu":
        u = rng.random(shape, dtype=gen_dt) if kind == "uniform" else rng.standard_normal(shape, dtype=gen_dt)
    else:
        u = (rng.random_sample(size=shape, dtype=gen_dt) if kind == "uniform"
             else rng.standard_normal(size=shape, dtype=gen_dt))
    return u


UNIFORM_RANDOM = register_op(
    "uniform_random",
    "Out = a tensor of `shape` with elements drawn uniformly from [min, max). With diag_num > 0, the "
    "flat positions i * (diag_step + 1) for i < diag_num are then set to diag_val (an identity-like "
    "initialiser). Paddle accepts min > max (elements then lie in (max, min]); so does kernelcore.",
    inputs=SHAPE_TENSOR_SLOTS, outputs=[Out("Out", "the random tensor")],
    attrs=[*RANDOM_SHAPE_ATTRS,
           Attr("min", A.FLOAT, "the lower bound (inclusive)", -1.0),
           Attr("max", A.FLOAT, "the upper bound (exclusive)", 1.0),
           Attr("diag_num", A.INT, "how many diagonal elements to set to diag_val (0: none)", 0,
                checks=(at_least(0),)),
           Attr("diag_step", A.INT, "the flat-index gap between consecutive diagonal elements, minus one",
                0, checks=(at_least(0),)),
           Attr("diag_val", A.FLOAT, "the value of the diagonal elements", 1.0)],
    infer_shape=_random_infer)


@UNIFORM_RANDOM.kernel()
def uniform_random(ctx, ins, attrs):
    shape = tuple(_shape_from_inputs(ins[0], ins[1], attrs["shape"]))
    dt = dtypes.to_numpy(attrs["dtype"])
    lo, hi = attrs["min"], attrs["max"]
    u = _draw(ctx, ctx.rng(attrs["seed"]), "uniform", shape, dt)
    out = (lo + (hi - lo) * u).astype(dt, copy=False)
    n, step = attrs["diag_num"], attrs["diag_step"]
    if n > 0:
        size = out.size
        if size <= (n - 1) * (step + 1):
            raise ValueError(f"diag_num {n} with diag_step {step} reaches flat index {(n - 1) * (step + 1)}, "
                             f"but the output {list(shape)} has only {size} elements")
        flat = out.reshape(-1)  # our own fresh array: writing into it mutates no input
        flat[ctx.xp.arange(n) * (step + 1)] = attrs["diag_val"]
    return (out,)


GAUSSIAN_RANDOM = register_op(
    "gaussian_random",
    "Out = a tensor of `shape` with elements drawn from the normal distribution N(mean, std^2) "
    "(as mean + std * standard normal, so Paddle's acceptance of std < 0 carries over).",
    inputs=SHAPE_TENSOR_SLOTS, outputs=[Out("Out", "the random tensor")],
    attrs=[Attr("mean", A.FLOAT, "the mean of the distribution", 0.0),
           Attr("std", A.FLOAT, "the standard deviation of the distribution", 1.0),
           *RANDOM_SHAPE_ATTRS],
    infer_shape=_random_infer)


@GAUSSIAN_RANDOM.kernel()
def gaussian_random(ctx, ins, attrs):
    shape = tuple(_shape_from_inputs(ins[0], ins[1], attrs["shape"]))
    dt = dtypes.to_numpy(attrs["dtype"])
    z = _draw(ctx, ctx.rng(attrs["seed"]), "normal", shape, dt)
    return ((attrs["mean"] + attrs["std"] * z).astype(dt, copy=False),)


# ===========================================================================
# Copies, counters, casts
# ===========================================================================
ASSIGN = register_op(
    "assign",
    "Out = a copy of X (a tensor, or a tensor array: a list of tensors). With no X, Out is not written "
    "(Paddle's X is dispensable too).",
    inputs=[In("X", "the tensor (or tensor array) to copy", dispensable=True)],
    outputs=[Out("Out", "the copy")])


def _assign_infer(ic):
    if ic.has_input("X"):
        same_as()(ic)


ASSIGN.infer_shape = _assign_infer


@ASSIGN.kernel()
def assign(ctx, ins, attrs):
    x = ins[0]
    if x is None:
        return (None,)
    if isinstance(x, list):  # LOD_TENSOR_ARRAY: a new list, the same (immutable) tensors
        return (list(x),)
    return (x,)  # values are never mutated (kernels return new arrays), so sharing is a copy


INCREMENT = register_op(
    "increment",
    "Out = X + step for a one-element X (a loop counter). step is cast to X's dtype first, as in "
    "Paddle: an int64 counter with step 1.5 grows by 1. Paddle writes X and Out as the same variable; "
    "the kernel still returns a new array.",
    inputs=[In("X", "a tensor with exactly one element")],
    outputs=[Out("Out", "X + step, of X's shape and dtype")],
    attrs=[Attr("step", A.FLOAT, "the amount to add", 1.0)])


def _increment_infer(ic):
    x = ic.shape("X")
    if all(d >= 0 for d in x) and math.prod(x) != 1:
        ic.fail(f"X must hold exactly one element, got shape {list(x)} ({math.prod(x)} elements)")
    ic.set_output("Out", x, ic.dtype("X"))


INCREMENT.infer_shape = _increment_infer


@INCREMENT.kernel()
def increment(ctx, ins, attrs):
    x = ins[0]
    if x.size != 1:
        raise ValueError(f"X must hold exactly one element, got shape {list(x.shape)}")
    step = ctx.xp.asarray(attrs["step"]).astype(x.dtype)  # a C cast: trunc toward zero for integers
    return (x + step,)


CAST = register_op(
    "cast",
    "Out = X converted to out_dtype, elementwise (floats to integers truncate toward zero; nonzero to "
    "bool is true). in_dtype is required, as in Paddle, but only describes X: the kernel converts "
    "from X's actual dtype.",
    inputs=[In("X", "the tensor to convert")], outputs=[Out("Out", "X as out_dtype, of X's shape")],
    attrs=[Attr("in_dtype", A.INT, "(VarType) X's data type", checks=(NUMPY_DTYPE,)),
           Attr("out_dtype", A.INT, "(VarType) the output's data type", checks=(NUMPY_DTYPE,)),
           Attr("onednn_data_type", A.STRING, "oneDNN hint (ignored)", "", extra=True)])


def _cast_infer(ic):
    ic.set_output("Out", ic.shape("X"), ic.attr("out_dtype"))


CAST.infer_shape = _cast_infer


@CAST.kernel()
def cast(ctx, ins, attrs):
    return (ins[0].astype(dtypes.to_numpy(attrs["out_dtype"])),)  # astype copies, even to the same dtype


FILL_ZEROS_LIKE = register_op(
    "fill_zeros_like", "Out = a tensor of zeros with X's shape and dtype.",
    inputs=[In("X", "the tensor whose shape and dtype Out takes")],
    outputs=[Out("Out", "the zeros")], infer_shape=same_as())


@FILL_ZEROS_LIKE.kernel()
def fill_zeros_like(ctx, ins, attrs):
    return (ctx.xp.zeros_like(ins[0]),)


# ===========================================================================
# Reshapes and joins
# ===========================================================================
# XShape (reshape2, transpose2): Paddle declares it [0] + X.dims with X's dtype and never fills it;
# only the grad ops read its dims. kernelcore writes a zero-size array of exactly that shape and
# dtype: the declared and the runtime shape agree, and it costs no memory.
XSHAPE = Out("XShape", "[0] + X.dims, X's dtype, no data: holds X's shape for the gradient op",
             dispensable=True, intermediate=True)
ONEDNN_EXTRA = Attr("onednn_data_type", A.STRING, "oneDNN hint (ignored)", "", extra=True)


def _set_xshape(ic):
    ic.set_output("XShape", (0, *ic.shape("X")), ic.dtype("X"))


def _xshape(xp, x):
    return xp.empty((0, *x.shape), dtype=x.dtype)


def reshape_dims(shape, in_dims) -> list[int]:
    """Paddle's ValidateShape: 0 copies X's dim at the same index, one -1 is inferred from the element
    count. `in_dims` may hold -1 (unknown); then so may the result. Raises ValueError on a contradiction."""
    shape, in_dims = list(shape), list(in_dims)
    out, unk = [], None
    for i, d in enumerate(shape):
        if d == -1:
            if unk is not None:
                raise ValueError(f"shape {shape}: only one dim may be -1, but dims {unk} and {i} are")
            unk = i
            out.append(-1)
        elif d == 0:
            if i >= len(in_dims):
                raise ValueError(f"shape {shape}: the 0 at index {i} copies X's dim {i}, but X {in_dims} "
                                 f"has only {len(in_dims)} dims")
            out.append(in_dims[i])
        elif d < 0:
            raise ValueError(f"shape {shape}: dim {i} is {d}; a dim must be > 0, 0 (copy X's) or -1 (infer it)")
        else:
            out.append(d)
    if any(d < 0 for d in in_dims):
        return out  # X has unknown dims: nothing more can be checked now
    in_size = math.prod(in_dims)
    known = math.prod(d for i, d in enumerate(out) if i != unk)
    if unk is not None:
        if known == 0 or in_size % known:
            raise ValueError(f"cannot reshape X {in_dims} ({in_size} elements) to {shape}: the dims other "
                             f"than the -1 hold {known} elements, which does not divide {in_size}")
        out[unk] = in_size // known
    elif known != in_size:
        raise ValueError(f"cannot reshape X {in_dims} ({in_size} elements) to {shape} = {out} "
                         f"({known} elements)")
    return out


def _fail_on_value_error(ic, fn, *args):
    try:
        return fn(*args)
    except ValueError as e:
        ic.fail(str(e))


RESHAPE2 = register_op(
    "reshape2",
    "Out = X with a new shape and the same elements in row-major order. In the target shape, 0 copies "
    "X's dim at that index and one -1 is inferred from the element count. The target comes from "
    "ShapeTensor if given, else from Shape, else from the `shape` attribute (Paddle's priority).",
    inputs=[In("X", "the tensor to reshape"),
            In("Shape", "(1-D int32 tensor) the target shape; overrides `shape`", dispensable=True),
            In("ShapeTensor", "(1-element int32 tensors) the target dims one by one; overrides Shape and "
               "`shape`", duplicable=True, dispensable=True)],
    outputs=[Out("Out", "the reshaped tensor (it shares X's data where NumPy/CuPy can)"), XSHAPE],
    attrs=[Attr("shape", A.INTS, "the target shape: dims > 0, 0 = copy X's dim, at most one -1 = infer", []),
           ONEDNN_EXTRA])


def _reshape2_infer(ic):
    x = ic.shape("X")
    attr_shape = list(_attr(ic, "shape", []))
    n_list = len(ic.input_names("ShapeTensor"))
    if n_list:
        # Paddle writes the dims it knows into `shape` and -1 for those the tensors give.
        out = ([x[i] if d == 0 and i < len(x) else (d if d > 0 else -1) for i, d in enumerate(attr_shape)]
               if len(attr_shape) == n_list else [-1] * n_list)
    elif ic.has_input("Shape"):
        st = ic.shape("Shape")
        if len(st) != 1:
            ic.fail(f"Shape must be a 1-D tensor, got shape {list(st)}")
        out = [-1] * (len(attr_shape) or max(st[0], 0))
        if st[0] < 0 and not attr_shape:
            _set_xshape(ic)
            return  # the rank is not known yet
    else:
        out = _fail_on_value_error(ic, reshape_dims, attr_shape, x)
    ic.set_output("Out", out, ic.dtype("X"))
    _set_xshape(ic)


RESHAPE2.infer_shape = _reshape2_infer


@RESHAPE2.kernel()
def reshape2(ctx, ins, attrs):
    x, shape_t, shape_list = ins
    shape = ints_operand(shape_list, shape_t, attrs["shape"], "ShapeTensor")
    return (x.reshape(reshape_dims(shape, x.shape)), _xshape(ctx.xp, x))


def perm_axes(axis, ndim: int) -> list[int]:
    """transpose2's `axis` as a permutation of range(ndim); negative entries count from the end."""
    axis = list(axis)
    if len(axis) != ndim:
        raise ValueError(f"axis {axis} has {len(axis)} entries but X has {ndim} dims")
    out = []
    for a in axis:
        if not -ndim <= a < ndim:
            raise ValueError(f"axis {axis}: {a} is out of range for a {ndim}-d X")
        out.append(a + ndim if a < 0 else a)
    if len(set(out)) != ndim:
        raise ValueError(f"axis {axis} must name every dim of X exactly once")
    return out


TRANSPOSE2 = register_op(
    "transpose2",
    "Out = X with its dims permuted: Out.dims[i] = X.dims[axis[i]] (negative axis entries count from the end).",
    inputs=[In("X", "the tensor to transpose")],
    outputs=[Out("Out", "the transposed tensor"), XSHAPE],
    attrs=[Attr("axis", A.INTS, "a permutation of X's dims"),
           Attr("data_format", A.STRING, "oneDNN layout hint (ignored)", "AnyLayout", extra=True),
           ONEDNN_EXTRA])


def _transpose2_infer(ic):
    x = ic.shape("X")
    perm = _fail_on_value_error(ic, perm_axes, _attr(ic, "axis", []), len(x))
    ic.set_output("Out", [x[a] for a in perm], ic.dtype("X"))
    _set_xshape(ic)


TRANSPOSE2.infer_shape = _transpose2_infer


@TRANSPOSE2.kernel()
def transpose2(ctx, ins, attrs):
    x = ins[0]
    return (ctx.xp.transpose(x, perm_axes(attrs["axis"], x.ndim)), _xshape(ctx.xp, x))


CONCAT = register_op(
    "concat",
    "Out = the X tensors joined along `axis` (negative counts from the end). Every X has the same rank "
    "and dtype and the same dims off the axis. AxisTensor, if given, overrides `axis`.",
    inputs=[In("X", "the tensors to join, in order", duplicable=True),
            In("AxisTensor", "(1-element int tensor) the axis; overrides `axis`", dispensable=True)],
    outputs=[Out("Out", "the joined tensor")],
    attrs=[Attr("axis", A.INT, "the dim to join along; negative counts from the end", 0), ONEDNN_EXTRA])


def _concat_infer(ic):
    shapes = ic.shapes("X")
    names = ic.input_names("X")
    dts = [ic.dtype("X", i) for i in range(len(names))]
    rank = len(shapes[0])
    for i, (s, dt) in enumerate(zip(shapes, dts)):
        if dt != dts[0]:
            ic.fail(f"X[{i}] ({names[i]}) is {ic.dtype_name(dt)} but X[0] ({names[0]}) is {ic.dtype_name(dts[0])}")
        if len(s) != rank:
            ic.fail(f"X[{i}] ({names[i]}) has shape {list(s)} but X[0] ({names[0]}) has {list(shapes[0])}: "
                    f"every input needs the same rank")
    if rank == 0:
        ic.fail("cannot concat 0-d tensors")
    if ic.has_input("AxisTensor"):
        ic.set_output("Out", [-1] * rank, dts[0])  # the axis is known only at run time
        return
    axis = normalize_axis(_attr(ic, "axis", 0), rank, ic)
    out = list(shapes[0])
    for i, s in enumerate(shapes[1:], 1):
        for j in range(rank):
            if j == axis:
                continue
            if out[j] >= 0 and s[j] >= 0 and out[j] != s[j]:
                ic.fail(f"X[{i}] ({names[i]}) has shape {list(s)} but X[0] ({names[0]}) has {list(shapes[0])}: "
                        f"dim {j} differs off the concat axis {axis}")
            if out[j] < 0:
                out[j] = s[j]
    out[axis] = -1 if any(s[axis] < 0 for s in shapes) else sum(s[axis] for s in shapes)
    ic.set_output("Out", out, dts[0])


CONCAT.infer_shape = _concat_infer


@CONCAT.kernel()
def concat(ctx, ins, attrs):
    xs, axis_t = ins
    axis = one_int(axis_t, "AxisTensor") if axis_t is not None else attrs["axis"]
    first = xs[0]
    for i, x in enumerate(xs[1:], 1):
        if x.dtype != first.dtype:  # NumPy would promote silently; Paddle refuses
            raise TypeError(f"X[{i}] is {x.dtype} but X[0] is {first.dtype}")
        if x.ndim != first.ndim:
            raise ValueError(f"X[{i}] has shape {list(x.shape)} but X[0] has {list(first.shape)}")
    return (ctx.xp.concatenate(xs, axis=normalize_axis(axis, first.ndim)),)


def split_sizes(dim: int, num: int, sections, n_out: int | None = None) -> list[int]:
    """The size of each piece along the axis (Paddle: non-empty `sections` win over `num`). `dim` may be
    -1 (unknown): then a -1 section stays -1 and nothing is checked. Raises ValueError on a contradiction."""
    sections = list(sections)
    if sections:
        if n_out is not None and n_out != len(sections):
            raise ValueError(f"sections {sections} make {len(sections)} pieces but Out names {n_out} variables")
        unk = [i for i, s in enumerate(sections) if s == -1]
        if len(unk) > 1:
            raise ValueError(f"sections {sections}: only one section may be -1, but sections {unk} are")
        bad = [s for s in sections if s < -1]
        if bad:
            raise ValueError(f"sections {sections}: a section must be >= 0 or -1 (the rest), got {bad[0]}")
        if dim < 0:
            return sections
        rest = sum(s for s in sections if s != -1)
        if unk:
            if rest >= dim:
                raise ValueError(f"sections {sections}: the given sections sum to {rest}, which leaves nothing "
                                 f"for the -1 section of a dim of size {dim}")
            sections[unk[0]] = dim - rest
        elif rest != dim:
            raise ValueError(f"sections {sections} sum to {rest}, but the dim being split has size {dim}")
        return sections
    if num <= 0:
        raise ValueError("split needs num > 0 or non-empty sections")
    if n_out is not None and n_out != num:
        raise ValueError(f"num is {num} but Out names {n_out} variables")
    if dim < 0:
        return [-1] * num
    if dim % num:
        raise ValueError(f"num {num} does not divide the dim being split, of size {dim}")
    return [dim // num] * num


SPLIT = register_op(
    "split",
    "Out = X cut into pieces along `axis` (negative counts from the end): `sections` gives each piece's "
    "size (one -1 takes the rest; non-empty sections win over num), else `num` equal pieces. "
    "AxisTensor and SectionsTensorList, if given, override `axis` and `sections`.",
    inputs=[In("X", "the tensor to split"),
            In("AxisTensor", "(1-element int tensor) the axis; overrides `axis`", dispensable=True),
            In("SectionsTensorList", "(1-element int tensors) the sizes one by one; override `sections`",
               duplicable=True, dispensable=True)],
    outputs=[Out("Out", "the pieces, in order; as many variables as num or len(sections)", duplicable=True)],
    attrs=[Attr("axis", A.INT, "the dim to split; negative counts from the end", 0),
           Attr("num", A.INT, "the number of equal pieces (used when sections is empty)", 0,
                checks=(at_least(0),)),
           Attr("sections", A.INTS, "each piece's size along the axis; one may be -1 (the rest)", []),
           ONEDNN_EXTRA])


def _split_infer(ic):
    x = ic.shape("X")
    n_out = len(ic.output_names("Out"))
    num, sections = _attr(ic, "num", 0), list(_attr(ic, "sections", []))
    n_list = len(ic.input_names("SectionsTensorList"))
    if n_list:
        sections = [-1] * n_list  # sizes known at run time; only their count matters now
        if n_out != n_list:
            ic.fail(f"SectionsTensorList has {n_list} entries but Out names {n_out} variables")
    if ic.has_input("AxisTensor"):
        n = len(sections) or num
        if n != n_out:
            ic.fail(f"split makes {n} pieces but Out names {n_out} variables")
        for i in range(n_out):
            ic.set_output("Out", [-1] * len(x), ic.dtype("X"), i)
        return
    if len(x) == 0:
        ic.fail("cannot split a 0-d tensor")
    axis = normalize_axis(_attr(ic, "axis", 0), len(x), ic)
    dim = -1 if n_list else x[axis]
    try:
        sizes = split_sizes(dim, num, sections, n_out) if not n_list else sections
    except ValueError as e:
        ic.fail(f"X {list(x)}, axis {axis}: {e}")
    for i, size in enumerate(sizes):
        out = list(x)
        out[axis] = size
        ic.set_output("Out", out, ic.dtype("X"), i)


SPLIT.infer_shape = _split_infer


@SPLIT.kernel()
def split(ctx, ins, attrs):
    x, axis_t, sections_t = ins
    axis = one_int(axis_t, "AxisTensor") if axis_t is not None else attrs["axis"]
    axis = normalize_axis(axis, x.ndim)
    sections = ([one_int(t, "each SectionsTensorList entry") for t in sections_t] if sections_t
                else attrs["sections"])
    n_out = len(ctx.output_names("Out"))
    sizes = split_sizes(x.shape[axis], attrs["num"], sections, n_out)
    cuts = np.cumsum(sizes)[:-1].tolist()
    return (ctx.xp.split(x, cuts, axis=axis),)


# -- slice ---------------------------------------------------------------------
def slice_bounds(shape, axes, starts, ends) -> list[slice]:
    """Paddle's slice rule per axis: negative starts/ends count from the end, both clamp to
    [0, dim], and an end at or before its start gives an empty dim."""
    index = [slice(None)] * len(shape)
    for a, s, e in zip(axes, starts, ends):
        d = shape[a]
        if d < 0:
            index[a] = slice(s, e)
            continue
        s = min(max(s + d if s < 0 else s, 0), d)
        e = min(max(e + d if e < 0 else e, 0), d)
        index[a] = slice(s, max(e, s))
    return index


def slice_params(ic_or_attrs, starts_t=None, ends_t=None, starts_list=None, ends_list=None):
    """Paddle's priority for each of starts/ends: the 1-D tensor, else the list of one-element tensors (one per
    axis; Paddle writes it for bounds known only at run time, e.g. `x[:, :n]`), else the attribute."""
    if starts_t is not None:
        starts = [int(v) for v in to_host(starts_t).reshape(-1)]
    elif starts_list:
        starts = [one_int(t, "each StartsTensorList entry") for t in starts_list]
    else:
        starts = ic_or_attrs["starts"]
    if ends_t is not None:
        ends = [int(v) for v in to_host(ends_t).reshape(-1)]
    elif ends_list:
        ends = [one_int(t, "each EndsTensorList entry") for t in ends_list]
    else:
        ends = ic_or_attrs["ends"]
    return starts, ends


def _infer_slice(ic):
    x = ic.shape("Input")
    axes, decrease = ic.attr("axes"), ic.attr("decrease_axis") or []
    for a in axes:
        if not 0 <= a < len(x):
            ic.fail(f"axis {a} is out of range for Input of shape {list(x)}")
    if any(ic.has_input(t) for t in ("StartsTensor", "EndsTensor")) or \
            ic.input_names("StartsTensorList") or ic.input_names("EndsTensorList"):
        out = [-1 if i in axes else d for i, d in enumerate(x)]
    else:
        starts, ends = ic.attr("starts"), ic.attr("ends")
        if not len(axes) == len(starts) == len(ends):
            ic.fail(f"axes {axes}, starts {starts} and ends {ends} must have the same length")
        index = slice_bounds(x, axes, starts, ends)
        out = [d if d < 0 or i not in axes else len(range(*index[i].indices(d))) for i, d in enumerate(x)]
    for a in decrease:
        if out[a] not in (1, -1):
            ic.fail(f"decrease_axis {a} must have size 1, it has {out[a]}")
    ic.set_output("Out", [d for i, d in enumerate(out) if i not in decrease], ic.dtype("Input"))


SLICE = register_op(
    "slice", "Out = Input[starts:ends] along `axes` (Python-style bounds, clamped); `decrease_axis` drops "
             "those sliced dims of size 1.",
    inputs=[In("Input", "the tensor to slice"),
            In("StartsTensor", "starts as a 1-D tensor (overrides the attribute)", dispensable=True),
            In("EndsTensor", "ends as a 1-D tensor (overrides the attribute)", dispensable=True),
            In("StartsTensorList", "starts as one-element tensors, one per axis (overrides the attribute)",
               duplicable=True, dispensable=True),
            In("EndsTensorList", "ends as one-element tensors, one per axis (overrides the attribute)",
               duplicable=True, dispensable=True)],
    outputs=[Out("Out", "the slice")],
    attrs=[Attr("axes", A.INTS, "the axes to slice"),
           Attr("starts", A.INTS, "start index per axis (negative: from the end)", []),
           Attr("ends", A.INTS, "end index per axis, exclusive (negative: from the end)", []),
           Attr("infer_flags", A.INTS, "Paddle's per-axis 'known at build time' flags (ignored)", []),
           Attr("decrease_axis", A.INTS, "sliced axes of size 1 to remove from Out", [])],
    infer_shape=_infer_slice)


@SLICE.kernel()
def slice_(ctx, ins, attrs):
    x, starts_t, ends_t, starts_l, ends_l = ins
    starts, ends = slice_params(attrs, starts_t, ends_t, starts_l, ends_l)
    out = x[tuple(slice_bounds(x.shape, attrs["axes"], starts, ends))]
    if attrs["decrease_axis"]:
        out = out.reshape([d for i, d in enumerate(out.shape) if i not in attrs["decrease_axis"]])
    return (out,)


# -- fill_any_like: Paddle's backward writes it (value 0) for an output gradient no op produces --------
FILL_ANY_LIKE = register_op(
    "fill_any_like", "Out = a tensor of X's shape filled with `value`, of X's dtype (or `dtype` when "
                     "it is not -1). Paddle's backward writes it (value 0) for an output gradient no "
                     "op produces.",
    inputs=[In("X", "the tensor whose shape Out takes")], outputs=[Out("Out", "the filled tensor")],
    attrs=[Attr("value", A.FLOAT, "the fill value", 0.0),
           Attr("dtype", A.INT, "(VarType) Out's data type; -1: X's", -1)],
    infer_shape=lambda ic: ic.set_output("Out", ic.shape("X"),
                                         ic.dtype("X") if ic.attr("dtype") in (None, -1) else ic.attr("dtype")))


@FILL_ANY_LIKE.kernel()
def fill_any_like(ctx, ins, attrs):
    x = ins[0]
    if x is None:  # the output of a branch that did not run: its gradient is never read either
        return (None,)
    dt = x.dtype if attrs["dtype"] == -1 else dtypes.to_numpy(attrs["dtype"])
    return (ctx.xp.full(x.shape, attrs["value"], dtype=dt),)
