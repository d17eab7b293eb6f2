"""Tensor plumbing: feed/fetch, constants and random initialisers, copies, counters and casts (reshapes, joins and
slices: shape.py).

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
from ._infer import same_as

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


# -- fill_constant_batch_size_like: a constant whose batch dim is another tensor's --------------------------
def _infer_fcbsl(ic):
    shape = list(ic.attr("shape"))
    ref = ic.shape("Input")
    i, o = ic.attr("input_dim_idx") or 0, ic.attr("output_dim_idx") or 0
    if not 0 <= i < len(ref) or not 0 <= o < len(shape):
        ic.fail(f"input_dim_idx {i} / output_dim_idx {o} do not fit Input {list(ref)} and shape {shape}")
    shape[o] = ref[i]
    ic.set_output("Out", shape, ic.attr("dtype"))

FILL_CONSTANT_BATCH_SIZE_LIKE = register_op(
    "fill_constant_batch_size_like",
    "Out = a tensor of `shape` filled with `value`, except that dim output_dim_idx is Input's dim "
    "input_dim_idx (the batch size). str_value, when set, overrides value.",
    inputs=[In("Input", "the tensor whose batch size Out takes")],
    outputs=[Out("Out", "the filled tensor")],
    attrs=[Attr("shape", A.INTS, "Out's shape; the batch dim is replaced"),
           Attr("dtype", A.INT, "(VarType) Out's data type", VT.FP32),
           Attr("value", A.FLOAT, "the fill value", 0.0),
           Attr("str_value", A.STRING, "the fill value as text (overrides value when set)", ""),
           Attr("input_dim_idx", A.INT, "the batch dim of Input", 0),
           Attr("output_dim_idx", A.INT, "the batch dim of Out", 0),
           Attr("force_cpu", A.BOOLEAN, "Paddle: keep Out in host memory; ignored", False)],
    infer_shape=_infer_fcbsl)

@FILL_CONSTANT_BATCH_SIZE_LIKE.kernel()
def fill_constant_batch_size_like(ctx, ins, attrs):
    ref = ins[0]
    shape = list(attrs["shape"])
    i, o = attrs["input_dim_idx"], attrs["output_dim_idx"]
    if not 0 <= i < ref.ndim or not 0 <= o < len(shape):
        raise ValueError(f"input_dim_idx {i} / output_dim_idx {o} do not fit Input "
                               f"{list(ref.shape)} and shape {shape}")
    shape[o] = ref.shape[i]
    check_new_shape(shape)
    value = float(attrs["str_value"]) if attrs["str_value"] else attrs["value"]
    return (ctx.xp.full(shape, value, dtype=dtypes.to_numpy(attrs["dtype"])),)


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
