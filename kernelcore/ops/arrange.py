"""Ops that cut, join or repeat tensors: strided_slice, crop_tensor, unbind, broadcast_tensors, diag_embed,
repeat_interleave, kron and multiplex."""
from __future__ import annotations

from ..ir.proto.framework_pb2 import AttrType as A
from ..ir.registry import Attr, In, Out, register_op
from ._infer import normalize_axis
from .along_axis import checked_index
from .tensor import host_ints, one_int


def _given(tensor, tensor_list, attr):
    """A list attribute, or the tensor / tensor list that overrides it."""
    if tensor is not None:
        return host_ints(tensor)
    if tensor_list:
        return [one_int(t, "each list entry") for t in tensor_list]
    return list(attr)


def _clamped(v, dim, step):
    v = v + dim if v < 0 else v
    return min(max(v, 0), dim) if step > 0 else min(max(v, -1), dim - 1)


STRIDED_SLICE = register_op(
    "strided_slice", "Out = Input[starts:ends:strides] along `axes` (negative positions count from the end; "
                     "decrease_axis drops those dims).",
    inputs=[In("Input", "the tensor sliced"),
            *[In(f"{n}Tensor", f"(1-D int) overrides {n.lower()}", dispensable=True)
              for n in ("Starts", "Ends", "Strides")],
            *[In(f"{n}TensorList", f"(1-element ints) override {n.lower()}", duplicable=True, dispensable=True)
              for n in ("Starts", "Ends", "Strides")]],
    outputs=[Out("Out", "the slice, Input's dtype")],
    attrs=[Attr("axes", A.INTS, "the sliced dims"), Attr("starts", A.INTS, "the first positions", []),
           Attr("ends", A.INTS, "the positions past the last", []), Attr("strides", A.INTS, "the steps", []),
           Attr("infer_flags", A.INTS, "(not read)", []), Attr("decrease_axis", A.INTS, "dims to drop", [])])


def strided_index(x, ins, attrs):
    """(the slice tuple into Input, the shape before decrease_axis drops dims)."""
    _, st, et, tt, sl, el, tl = ins
    starts, ends = _given(st, sl, attrs["starts"]), _given(et, el, attrs["ends"])
    strides = _given(tt, tl, attrs["strides"])
    axes = attrs["axes"]
    if not len(axes) == len(starts) == len(ends) == len(strides):
        raise ValueError(f"strided_slice: axes, starts, ends and strides differ in length: {axes}, {starts}, "
                         f"{ends}, {strides}")
    index = [slice(None)] * x.ndim
    for a, s, e, step in zip(axes, starts, ends, strides):
        if step == 0:
            raise ValueError("strided_slice: a stride is 0")
        d = normalize_axis(a, x.ndim)
        s, e = _clamped(s, x.shape[d], step), _clamped(e, x.shape[d], step)
        index[d] = slice(s, None if e < 0 else e, step)
    return tuple(index)


def drop_axes(t, axes):
    keep = [d for d in range(t.ndim) if d not in {normalize_axis(a, t.ndim) for a in axes}]
    return t.reshape([t.shape[d] for d in keep])


@STRIDED_SLICE.kernel()
def strided_slice(ctx, ins, attrs):
    x = ins[0]
    return (drop_axes(x[strided_index(x, ins, attrs)], attrs["decrease_axis"]).copy(),)


CROP_TENSOR = register_op(
    "crop_tensor", "Out = X[offsets : offsets + shape] per dim (a shape of -1 runs to the end).",
    inputs=[In("X", "the tensor cropped"), In("Shape", "(1-D int) overrides shape", dispensable=True),
            In("ShapeTensor", "(1-element ints) override shape", duplicable=True, dispensable=True),
            In("Offsets", "(1-D int) overrides offsets", dispensable=True),
            In("OffsetsTensor", "(1-element ints) override offsets", duplicable=True, dispensable=True)],
    outputs=[Out("Out", "the crop, X's dtype")],
    attrs=[Attr("shape", A.INTS, "the crop's shape", []), Attr("offsets", A.INTS, "where it starts", [])])


def crop_index(x, ins, attrs):
    _, shape_t, shape_l, off_t, off_l = ins
    shape = _given(shape_t, shape_l, attrs["shape"]) or list(x.shape)
    offsets = _given(off_t, off_l, attrs["offsets"]) or [0] * x.ndim
    if len(shape) != x.ndim or len(offsets) != x.ndim:
        raise ValueError(f"crop_tensor: shape {shape} and offsets {offsets} need {x.ndim} values")
    index = []
    for d, (n, o) in enumerate(zip(shape, offsets)):
        n = x.shape[d] - o if n == -1 else n
        if o < 0 or n < 0 or o + n > x.shape[d]:
            raise ValueError(f"crop_tensor: offset {o} and size {n} do not fit dim {d} of size {x.shape[d]}")
        index.append(slice(o, o + n))
    return tuple(index)


@CROP_TENSOR.kernel()
def crop_tensor(ctx, ins, attrs):
    return (ins[0][crop_index(ins[0], ins, attrs)].copy(),)


UNBIND = register_op("unbind", "Out[i] = X[..., i, ...] along `axis`, one tensor per position.",
                     inputs=[In("X", "the tensor")], outputs=[Out("Out", "X's slices", duplicable=True)],
                     attrs=[Attr("axis", A.INT, "the axis", 0)])


@UNBIND.kernel()
def unbind(ctx, ins, attrs):
    x = ins[0]
    axis = normalize_axis(attrs["axis"], x.ndim)
    return ([ctx.xp.take(x, i, axis=axis) for i in range(x.shape[axis])],)


BROADCAST_TENSORS = register_op(
    "broadcast_tensors", "Out[i] = X[i] broadcast to the shape all the X broadcast to.",
    inputs=[In("X", "the tensors", duplicable=True)], outputs=[Out("Out", "one per X", duplicable=True)])


@BROADCAST_TENSORS.kernel()
def broadcast_tensors(ctx, ins, attrs):
    xp = ctx.xp
    shape = xp.broadcast_shapes(*[x.shape for x in ins[0]])
    return ([xp.broadcast_to(x, shape).copy() for x in ins[0]],)


DIAG_EMBED = register_op(
    "diag_embed", "Out = Input's last dim placed on diagonal `offset` of the (dim1, dim2) matrices of a tensor one "
                  "rank larger, 0 elsewhere.",
    inputs=[In("Input", "the diagonals")], outputs=[Out("Out", "rank + 1, Input's dtype")],
    attrs=[Attr("offset", A.INT, "the diagonal", 0), Attr("dim1", A.INT, "the first matrix dim", -2),
           Attr("dim2", A.INT, "the second matrix dim", -1)])


def diag_embed_geometry(x, attrs):
    """(output shape, dim1, dim2) for Input x."""
    nd = x.ndim + 1
    d1, d2 = normalize_axis(attrs["dim1"], nd), normalize_axis(attrs["dim2"], nd)
    if d1 == d2:
        raise ValueError("diag_embed: dim1 and dim2 must differ")
    n = x.shape[-1] + abs(attrs["offset"])
    batch = list(x.shape[:-1])
    shape = []
    for d in range(nd):
        shape.append(n if d in (d1, d2) else batch.pop(0))
    return shape, d1, d2


def diagonal_positions(xp, n_diag, offset):
    rows = xp.arange(n_diag) + max(-offset, 0)
    return rows, rows + offset


@DIAG_EMBED.kernel()
def diag_embed(ctx, ins, attrs):
    xp = ctx.xp
    x = ins[0]
    shape, d1, d2 = diag_embed_geometry(x, attrs)
    out = xp.zeros(shape, dtype=x.dtype)
    moved = xp.moveaxis(out, (d1, d2), (-2, -1))
    i, j = diagonal_positions(xp, x.shape[-1], attrs["offset"])
    moved[..., i, j] = x
    return (out,)


REPEAT_INTERLEAVE = register_op(
    "repeat_interleave", "Out = each slice of X along `dim` repeated Repeats times (RepeatsTensor: a count per slice).",
    inputs=[In("X", "the tensor"), In("RepeatsTensor", "(1-D int) a count per slice", dispensable=True)],
    outputs=[Out("Out", "X grown along `dim`")],
    attrs=[Attr("Repeats", A.INT, "one count for every slice", 1), Attr("dim", A.INT, "the axis", 0),
           Attr("output_size", A.LONG, "(not read)", -1)])


def repeats_of(xp, x, ins, attrs):
    t = x.reshape(-1) if x.ndim == 0 else x
    axis = normalize_axis(attrs["dim"], t.ndim)
    reps = host_ints(ins[1]) if ins[1] is not None else attrs["Repeats"]
    return t, axis, reps


@REPEAT_INTERLEAVE.kernel()
def repeat_interleave(ctx, ins, attrs):
    t, axis, reps = repeats_of(ctx.xp, ins[0], ins, attrs)
    return (ctx.xp.repeat(t, reps, axis=axis),)


KRON = register_op("kron", "Out = the Kronecker product of X and Y (the lower-rank one padded with leading 1s).",
                   inputs=[In("X", "a tensor"), In("Y", "a tensor")], outputs=[Out("Out", "the product")])


@KRON.kernel()
def kron(ctx, ins, attrs):
    return (ctx.xp.kron(*ins),)


MULTIPLEX = register_op(
    "multiplex", "Out[b] = X[Ids[b]][b]: row b from the candidate Ids[b] names.",
    inputs=[In("X", "the candidates, one shape", duplicable=True), In("Ids", "[B, 1] int")],
    outputs=[Out("Out", "a candidate's shape")])


def multiplex_ids(xp, xs, ids):
    return checked_index(xp, ids.reshape(-1), len(xs), "multiplex")


@MULTIPLEX.kernel()
def multiplex(ctx, ins, attrs):
    xp = ctx.xp
    xs, ids = ins
    stacked = xp.stack(xs)
    sel = multiplex_ids(xp, xs, ids)
    return (stacked[sel, xp.arange(sel.shape[0])],)


FILL_DIAGONAL_TENSOR = register_op(
    "fill_diagonal_tensor", "Out = X with its diagonal `offset` over (dim1, dim2) replaced by Y.",
    inputs=[In("X", "the tensor"), In("Y", "X's other dims, then the diagonal's length")],
    outputs=[Out("Out", "X's shape and dtype")],
    attrs=[Attr("offset", A.LONG, "the diagonal", 0), Attr("dim1", A.INT, "the first matrix dim", 0),
           Attr("dim2", A.INT, "the second matrix dim", 1)])


def diagonal_view_index(xp, x, attrs):
    """(dims moved last, the diagonal's (rows, cols) in them)."""
    d1, d2 = normalize_axis(attrs["dim1"], x.ndim), normalize_axis(attrs["dim2"], x.ndim)
    if d1 == d2:
        raise ValueError("fill_diagonal_tensor: dim1 and dim2 must differ")
    k = attrs["offset"]
    n = max(0, min(x.shape[d1] - max(-k, 0), x.shape[d2] - max(k, 0)))
    return (d1, d2), diagonal_positions(xp, n, k)


@FILL_DIAGONAL_TENSOR.kernel()
def fill_diagonal_tensor(ctx, ins, attrs):
    xp = ctx.xp
    x, y = ins
    dims, (i, j) = diagonal_view_index(xp, x, attrs)
    out = x.copy()
    moved = xp.moveaxis(out, dims, (-2, -1))
    target = moved[..., i, j]
    moved[..., i, j] = y.astype(x.dtype).reshape(target.shape)
    return (out,)
