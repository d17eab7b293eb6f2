"""Gradients of kernelcore/ops/dims.py, with the slots Paddle 2.6.2's backward writes (see
tests/paddle_oracle/NOTES.md): squeeze2/unsqueeze2/flatten read X's shape from XShape, as reshape2_grad does; the
rest sum Out@GRAD back to where X's elements went.
"""
from __future__ import annotations

from ..ops.tensor import host_ints, one_int
from ..ops.dims import tile_reps
from ..ops._infer import normalize_axis
from ..transforms.backward import EMPTY_VAR, standard
from .math import unbroadcast


# -- reshapes through XShape -------------------------------------------------------------------------------
for _type, _ins in (("unsqueeze2", ("AxesTensor", "AxesTensorList")), ("squeeze2", ()),
                    ("flatten_contiguous_range", ())):
    _d = standard(_type, ins=_ins, outs=("XShape",), infer_from={"X@GRAD": ("XShape", True)},
                  comment="X@GRAD = Out@GRAD reshaped to X's shape (XShape without its leading 0).")

    def _k(ctx, ins, attrs):
        xshape, g = ins[-2], ins[-1]
        return (g.reshape(xshape.shape[1:]),)
    _k.__name__ = f"{_type}_grad"
    _d.kernel()(_k)


# -- expand, tile -----------------------------------------------------------------------------------------
EXPAND_V2_GRAD = standard("expand_v2", ins=("X", "Shape", "expand_shapes_tensor"),
                          comment="X@GRAD = Out@GRAD summed over the dims X was broadcast along.")


@EXPAND_V2_GRAD.kernel()
def expand_v2_grad(ctx, ins, attrs):
    x, _, _, g = ins
    return (unbroadcast(g, x.shape, x.shape).astype(x.dtype, copy=False),)


EXPAND_AS_V2_GRAD = standard("expand_as_v2", ins=("X",),
                             comment="X@GRAD = Out@GRAD summed over the dims X was broadcast along.")


@EXPAND_AS_V2_GRAD.kernel()
def expand_as_v2_grad(ctx, ins, attrs):
    x, g = ins
    return (unbroadcast(g, x.shape, x.shape).astype(x.dtype, copy=False),)


TILE_GRAD = standard("tile", ins=("X", "RepeatTimes", "repeat_times_tensor"),
                     comment="X@GRAD = the sum of the Out@GRAD blocks that are copies of X.")


@TILE_GRAD.kernel()
def tile_grad(ctx, ins, attrs):
    x, reps_t, reps_list, g = ins
    if reps_list:
        reps = [one_int(t, "each repeat_times_tensor entry") for t in reps_list]
    elif reps_t is not None:
        reps = host_ints(reps_t)
    else:
        reps = attrs["repeat_times"]
    pad, reps = tile_reps(x.ndim, reps)
    dims = [1] * pad + list(x.shape)
    split = [v for r, d in zip(reps, dims) for v in (r, d)]  # [r0, d0, r1, d1, ...]
    summed = g.reshape(split).sum(axis=tuple(range(0, len(split), 2)))
    return (summed.reshape(x.shape).astype(x.dtype, copy=False),)


# -- stack, unstack -----------------------------------------------------------------------------------------
STACK_GRAD = standard("stack", ins=("X",), out_grads=("Y",), drop_empty=False,
                      comment="X@GRAD[i] = Y@GRAD's slice i along `axis`. A position of X that needs no gradient "
                              "is named @EMPTY@ and not written.")


@STACK_GRAD.kernel()
def stack_grad(ctx, ins, attrs):
    xs, g = ins
    axis = normalize_axis(attrs["axis"], g.ndim)
    names = ctx.output_names("X@GRAD")
    return ([ctx.xp.take(g, i, axis=axis) if n != EMPTY_VAR else None for i, n in enumerate(names)],)


UNSTACK_GRAD = standard("unstack", ins=(), out_grads=("Y",),
                        comment="X@GRAD = the Y@GRADs stacked along `axis`.")


def _unstack_grad_infer(ic):
    shapes = ic.shapes("Y@GRAD")
    axis = normalize_axis(ic.attr("axis"), len(shapes[0]) + 1, ic)
    out = list(shapes[0])
    out.insert(axis, len(shapes))
    ic.set_output("X@GRAD", out, ic.dtype("Y@GRAD", 0))


UNSTACK_GRAD.infer_shape = _unstack_grad_infer


@UNSTACK_GRAD.kernel()
def unstack_grad(ctx, ins, attrs):
    gs = ins[0]
    return (ctx.xp.stack(gs, axis=normalize_axis(attrs["axis"], gs[0].ndim + 1)),)
