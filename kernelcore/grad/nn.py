"""Gradients of the layers' ops: the embedding lookup (dense W@GRAD) and dropout; optimizer updates
have none."""
from __future__ import annotations

import numpy as np

from ..ops.dropout import UPSCALE, is_inference
from ..transforms.backward import no_grad, standard

LOOKUP_GRAD = standard("lookup_table_v2", ins=("Ids", "W"), in_grads=("W",),
                       comment="W@GRAD (dense, W's shape) = for each id, the sum of the Out@GRAD rows that "
                               "looked it up; rows of padding_idx get nothing. Ids have no gradient.")


@LOOKUP_GRAD.kernel()
def lookup_table_v2_grad(ctx, ins, attrs):
    xp = ctx.xp
    ids, w, g = ins
    flat = ids.reshape(-1).astype(xp.int64)
    rows = g.reshape(flat.shape[0], w.shape[1])
    if attrs["padding_idx"] != -1:
        keep = flat != attrs["padding_idx"]
        flat, rows = flat[keep], rows[keep]
    dw = xp.zeros(w.shape, dtype=g.dtype)
    if xp is np and flat.size:
        # the rows of each id summed as one run of the rows sorted by id: 45-70 us for 1024 rows of 32 float32
        # into 2-128 ids, where np.add.at took 220
        order = np.argsort(flat, kind="stable")
        ids_sorted = flat[order]
        starts = np.flatnonzero(np.concatenate(([True], ids_sorted[1:] != ids_sorted[:-1])))
        dw[ids_sorted[starts]] = np.add.reduceat(rows[order], starts, axis=0)
    else:
        xp.add.at(dw, flat, rows)  # repeated ids accumulate (CuPy: ufunc.at, a scatter-add)
    return (dw,)


DROPOUT_GRAD = standard("dropout", outs=("Mask",),
                        comment="Training: X@GRAD = Out@GRAD * Mask (divided by 1 - dropout_prob for "
                                "upscale_in_train). Inference (is_test, or not a training run): "
                                "Out@GRAD * (1 - dropout_prob) for downgrade_in_infer, Out@GRAD for "
                                "upscale_in_train.")

@DROPOUT_GRAD.kernel()
def dropout_grad(ctx, ins, attrs):
    mask, g = ins
    p, upscale = attrs["dropout_prob"], attrs["dropout_implementation"] == UPSCALE
    if mask is None or is_inference(ctx, attrs):
        return (g.copy() if upscale else g * g.dtype.type(1.0 - p),)
    if upscale and p == 1.0:
        return (ctx.xp.zeros_like(g),)
    dx = g * mask.astype(g.dtype)
    return (dx / g.dtype.type(1.0 - p) if upscale else dx,)


no_grad("sgd", "momentum", "adam", "adamw")
