"""Tensor arrays (Paddle's LoDTensorArray): a LOD_TENSOR_ARRAY variable holds a Python list of tensors.

  write_to_array          Out[I] = X, the array grown to I + 1 entries where it is shorter
  read_from_array         Out = X[I]
  lod_array_length        Out = len(X), an int64 [1] tensor (PIR: pd_op.array_length)
  tensor_array_to_tensor  the entries concatenated (or stacked) along `axis`, and each entry's size there

A value is never changed once written (kernels return new values), so write_to_array builds a new list
holding the same tensors: a trace or a debugger that kept the array as it was before the write still sees it
so. An array nobody wrote yet (Paddle's create_array writes no op) holds no value: it reads as empty.
Entries between the old end and I that no write filled are holes (None), as Paddle's resize leaves
uninitialised tensors there; reading one is an error.
"""
from __future__ import annotations

from ..ir import dtypes
from ..ir.proto.framework_pb2 import AttrType as A
from ..ir.registry import Attr, In, Out, get_op_def, register_op
from ._infer import normalize_axis
from .tensor import one_int

# An index read from a tensor decides how long the list grows: a hostile I (2**40) would ask for terabytes of
# list. Paddle's programs index arrays by loop step (decoding steps, timesteps).
MAX_ARRAY_LENGTH = 1_000_000


def array_index(t, length_limit: int = MAX_ARRAY_LENGTH) -> int:
    """The entry an I tensor names: one non-negative integer below the bound."""
    i = one_int(t, "I")
    if not 0 <= i < length_limit:
        raise ValueError(f"I = {i} is outside [0, {length_limit}) (kernelcore's bound on a tensor array's "
                         f"length: kernelcore.ops.tensor_array.MAX_ARRAY_LENGTH)")
    return i


def as_array(value, what: str) -> list:
    """A LOD_TENSOR_ARRAY variable's value as a list: no value yet is the empty array."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValueError(f"{what} must be a tensor array (a list of tensors), got a "
                         f"{type(value).__name__} of shape {list(getattr(value, 'shape', ()))}")
    return value


def _same_element(in_slot: str, out_slot: str):
    def infer(ic):
        ic.set_output(out_slot, ic.shape(in_slot), ic.dtype(in_slot))
    return infer


# ---------------------------------------------------------------------------------------------------------
WRITE_TO_ARRAY = register_op(
    "write_to_array",
    "Out[I] = X: the array Out already holds (empty if none) with entry I set, grown to I + 1 entries "
    "where it is shorter. Out keeps the entries it had; the kernel writes a new list.",
    inputs=[In("X", "the tensor to write"), In("I", "an int64 [1] tensor: the entry to write")],
    outputs=[Out("Out", "the tensor array written into")],
    infer_shape=_same_element("X", "Out"))


@WRITE_TO_ARRAY.kernel()
def write_to_array(ctx, ins, attrs):
    x, i_t = ins
    i = array_index(i_t)
    var = ctx.output_var("Out")
    entries = list(as_array(var.value if var is not None else None, "Out"))
    if i >= len(entries):
        entries.extend([None] * (i + 1 - len(entries)))
    entries[i] = x
    return (entries,)


READ_FROM_ARRAY = register_op(
    "read_from_array",
    "Out = X[I]. Past the array's end Out is zeros shaped like X_W where X_W is given (Paddle writes it so "
    "when read_from_array is write_to_array's gradient and the loss never read that entry), else an error.",
    inputs=[In("X", "the tensor array"), In("I", "an int64 [1] tensor: the entry to read"),
            In("X_W", "the tensor write_to_array wrote (as write_to_array's gradient)", dispensable=True)],
    outputs=[Out("Out", "the entry")],
    infer_shape=_same_element("X", "Out"))


@READ_FROM_ARRAY.kernel()
def read_from_array(ctx, ins, attrs):
    arr, i_t, x_w = ins
    entries = as_array(arr, "X")
    i = array_index(i_t)
    if i < len(entries) and entries[i] is not None:
        return (entries[i],)
    if x_w is not None:
        return (ctx.xp.zeros_like(x_w),)
    if i < len(entries):
        raise ValueError(f"entry {i} of the tensor array was never written (entries 0..{len(entries) - 1})")
    raise ValueError(f"I = {i} is past the tensor array's end: it holds {len(entries)} entries")


def _length_infer(ic):
    ic.set_output("Out", (1,), dtypes.VT.INT64)


LOD_ARRAY_LENGTH = register_op(
    "lod_array_length",
    "Out = the number of entries of the tensor array X, as an int64 [1] tensor (holes counted).",
    inputs=[In("X", "the tensor array")], outputs=[Out("Out", "int64 [1]")], infer_shape=_length_infer)


@LOD_ARRAY_LENGTH.kernel()
def lod_array_length(ctx, ins, attrs):
    return (ctx.xp.asarray([len(as_array(ins[0], "X"))], dtype="int64"),)


# ---------------------------------------------------------------------------------------------------------
TENSOR_ARRAY_TO_TENSOR = register_op(
    "tensor_array_to_tensor",
    "Out = the entries of X concatenated along `axis` (use_stack: stacked along a new `axis`); OutIndex (int32, "
    "one per entry) = each entry's size along `axis` (stacked too, as Paddle's kernel reads it; 1 past the last axis).",
    inputs=[In("X", "the tensor array: entries of one dtype, equal shapes off `axis`")],
    outputs=[Out("Out", "the joined tensor"), Out("OutIndex", "int32 [len(X)]: each entry's share of Out")],
    attrs=[Attr("axis", A.INT, "the axis to join along", 0),
           Attr("use_stack", A.BOOLEAN, "stack (a new axis) instead of concatenating", False)])


def _to_tensor_infer(ic):
    x = list(ic.shape("X"))
    axis = ic.attr("axis") or 0
    if ic.attr("use_stack"):
        axis = normalize_axis(axis, len(x) + 1, ic)
        out = x[:axis] + [-1] + x[axis:]
    else:
        axis = normalize_axis(axis, len(x), ic)
        out = x[:axis] + [-1] + x[axis + 1:]
    ic.set_output("Out", out, ic.dtype("X"))
    ic.set_output("OutIndex", (-1,), dtypes.VT.INT32)


TENSOR_ARRAY_TO_TENSOR.infer_shape = _to_tensor_infer


def array_entries(arr, what: str = "X") -> list:
    """The entries of a tensor array that is to be read whole: every entry written, at least one."""
    entries = as_array(arr, what)
    if not entries:
        raise ValueError(f"the tensor array {what} is empty")
    holes = [k for k, e in enumerate(entries) if e is None]
    if holes:
        raise ValueError(f"entries {holes[:8]} of the tensor array {what} were never written")
    return entries


@TENSOR_ARRAY_TO_TENSOR.kernel()
def tensor_array_to_tensor(ctx, ins, attrs):
    xp = ctx.xp
    entries = array_entries(ins[0])
    rank = entries[0].ndim
    for k, e in enumerate(entries):
        if e.ndim != rank or e.dtype != entries[0].dtype:
            raise ValueError(f"entry {k} is {e.dtype} {list(e.shape)} but entry 0 is {entries[0].dtype} "
                             f"{list(entries[0].shape)}")
    if attrs["use_stack"]:
        axis = normalize_axis(attrs["axis"], rank + 1)
        # Paddle's kernel reads each entry's dims[axis] in both modes (1 where axis is the new last axis)
        sizes = [int(e.shape[axis]) if axis < rank else 1 for e in entries]
        out = xp.stack(entries, axis=axis)
    else:
        axis = normalize_axis(attrs["axis"], rank)
        sizes = [int(e.shape[axis]) for e in entries]
        out = xp.concatenate(entries, axis=axis)
    return out, xp.asarray(sizes, dtype="int32")


# ---------------------------------------------------------------------------------------------------------
# sum over tensor arrays: Paddle's sum kernel also adds LoDTensorArrays, entry by entry (an entry missing from
# some arrays is the sum of the others'); backward sums an array's gradient contributions with it. The math
# family's sum takes tensors, so the array case is added around its kernel here, where arrays are defined.
_SUM = get_op_def("sum")
_sum_tensors = _SUM.find_kernel("cpu", None)


def sum_arrays(xp, arrays: list) -> list:
    length = max(len(a) for a in arrays)
    out = []
    for k in range(length):
        parts = [a[k] for a in arrays if k < len(a) and a[k] is not None]
        out.append(None if not parts else parts[0] if len(parts) == 1 else sum(parts[1:], parts[0]))
    return out


@_SUM.kernel()
def sum_with_arrays(ctx, ins, attrs):
    xs = ins[0]
    if any(isinstance(x, list) for x in xs):
        return (sum_arrays(ctx.xp, [as_array(x, "each X") for x in xs]),)
    return _sum_tensors(ctx, ins, attrs)
