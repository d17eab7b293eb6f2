"""Gradients of the shape ops (kernelcore/ops/shape.py).

Following Paddle, split takes a forward op as its gradient (concat); reshape2 and transpose2 read X's shape from
their XShape output, so their grad ops need not keep X.
"""
from __future__ import annotations

import numpy as np

from ..ops._infer import normalize_axis
from ..ops.shape import perm_axes, slice_bounds, slice_params
from ..ops.tensor import one_int
from ..transforms.backward import EMPTY_VAR, GradContext, rule, standard


RESHAPE2_GRAD = standard("reshape2", outs=("XShape",), infer_from={"X@GRAD": ("XShape", True)},
                         comment="X@GRAD = Out@GRAD reshaped to X's shape (XShape without its leading 0).")


@RESHAPE2_GRAD.kernel()
def reshape2_grad(ctx, ins, attrs):
    xshape, g = ins
    return (g.reshape(xshape.shape[1:]),)


TRANSPOSE2_GRAD = standard("transpose2", outs=("XShape",), infer_from={"X@GRAD": ("XShape", True)},
                           comment="X@GRAD = Out@GRAD with the inverse permutation of `axis`.")


@TRANSPOSE2_GRAD.kernel()
def transpose2_grad(ctx, ins, attrs):
    xshape, g = ins
    perm = perm_axes(attrs["axis"], g.ndim)
    return (ctx.xp.transpose(g, np.argsort(perm).tolist()),)


CONCAT_GRAD = standard("concat", ins=("X", "AxisTensor"), drop_empty=False,
                       comment="X@GRAD[i] = the slice of Out@GRAD that X[i] filled along the concat axis. "
                               "A position of X that needs no gradient is named @EMPTY@ and not written.")


@CONCAT_GRAD.kernel()
def concat_grad(ctx, ins, attrs):
    xs, axis_t, g = ins
    axis = normalize_axis(one_int(axis_t, "AxisTensor") if axis_t is not None else attrs["axis"], g.ndim)
    cuts = np.cumsum([x.shape[axis] for x in xs])[:-1].tolist()
    pieces = ctx.xp.split(g, cuts, axis=axis)
    names = ctx.output_names("X@GRAD")
    return ([p if n != EMPTY_VAR else None for p, n in zip(pieces, names)],)


@rule("split")
def split_grad_rule(g: GradContext):
    """Paddle's SplitGradMaker: X@GRAD = concat(the Out@GRADs) along the split axis."""
    xg = g.input_grad("X")
    if not xg:
        return []
    inputs = {"X": g.output_grad("Out")}
    if g.has_input("AxisTensor"):
        inputs["AxisTensor"] = g.input("AxisTensor")
    return [g.grad_op("concat", inputs, {"Out": xg}, {"axis": g.attr("axis", 0)})]


SLICE_GRAD = standard("slice", ins=("Input", "StartsTensor", "EndsTensor", "StartsTensorList", "EndsTensorList"),
                      in_grads=("Input",),
                      infer_from={"Input@GRAD": ("Input", False)},
                      comment="Input@GRAD = zeros of Input's shape with Out@GRAD in the sliced region.")


@SLICE_GRAD.kernel()
def slice_grad(ctx, ins, attrs):
    x, starts_t, ends_t, starts_l, ends_l, g = ins
    starts, ends = slice_params(attrs, starts_t, ends_t, starts_l, ends_l)
    out = ctx.xp.zeros(x.shape, dtype=g.dtype)  # our own fresh array: filling it mutates nothing shared
    region = out[tuple(slice_bounds(x.shape, attrs["axes"], starts, ends))]
    region[...] = g.reshape(region.shape)
    return (out,)
