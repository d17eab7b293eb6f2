"""Shape and layout ops: reshape2, transpose2, concat, split and slice.

Shape-like inputs (ShapeTensor, AxisTensor, SectionsTensorList, StartsTensor, ...) are small integer tensors read on
the host when the op runs; Paddle gives them priority over the matching attribute, and so do we.
"""
from __future__ import annotations

import math

import numpy as np

from ..ir.proto.framework_pb2 import AttrType as A
from ..ir.registry import Attr, In, Out, at_least, register_op
from ..runtime.place import to_host
from ._infer import normalize_axis
from ._spatial import attr_or
from .tensor import ints_operand, one_int
# ===========================================================================
# Reshapes and joins
# ===========================================================================
# XShape (reshape2, transpose2): Paddle declares it [0] + X.dims with X's dtype and never fills it;
# only the grad ops read its dims. kernelcore writes a zero-size array of exactly that shape and
# dtype: the declared and the runtime shape agree, and it costs no memory.
XSHAPE = Out("XShape", "[0] + X.dims, X's dtype, no data: holds X's shape for the gradient op",
             dispensable=True, intermediate=True)
ONEDNN_EXTRA = Attr("onednn_data_type", A.STRING, "oneDNN hint (ignored)", "", extra=True)


def set_xshape(ic):
    ic.set_output("XShape", (0, *ic.shape("X")), ic.dtype("X"))


def xshape(xp, x):
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
    attr_shape = list(attr_or(ic, "shape", []))
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
            set_xshape(ic)
            return  # the rank is not known yet
    else:
        out = _fail_on_value_error(ic, reshape_dims, attr_shape, x)
    ic.set_output("Out", out, ic.dtype("X"))
    set_xshape(ic)


RESHAPE2.infer_shape = _reshape2_infer


@RESHAPE2.kernel()
def reshape2(ctx, ins, attrs):
    x, shape_t, shape_list = ins
    shape = ints_operand(shape_list, shape_t, attrs["shape"], "ShapeTensor")
    return (x.reshape(reshape_dims(shape, x.shape)), xshape(ctx.xp, x))


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
    perm = _fail_on_value_error(ic, perm_axes, attr_or(ic, "axis", []), len(x))
    ic.set_output("Out", [x[a] for a in perm], ic.dtype("X"))
    set_xshape(ic)


TRANSPOSE2.infer_shape = _transpose2_infer


@TRANSPOSE2.kernel()
def transpose2(ctx, ins, attrs):
    x = ins[0]
    return (ctx.xp.transpose(x, perm_axes(attrs["axis"], x.ndim)), xshape(ctx.xp, x))


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
    axis = normalize_axis(attr_or(ic, "axis", 0), rank, ic)
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
    num, sections = attr_or(ic, "num", 0), list(attr_or(ic, "sections", []))
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
    axis = normalize_axis(attr_or(ic, "axis", 0), len(x), ic)
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
