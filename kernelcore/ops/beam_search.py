"""Beam-search decoding: gather_tree, which nn.dynamic_decode writes after its while loop to turn each step's
chosen ids and parent beams into whole sequences (Paddle's gather_tree op).

The loop itself is plain ops over tensor arrays (kernelcore/ops/tensor_array.py): top_k_v2 over the flattened
beam x vocab scores, elementwise_floordiv and elementwise_mod to split the flat index into parent beam and token.
"""
from __future__ import annotations

from ..ir.registry import In, Out, register_op


def _gather_tree_infer(ic):
    ids, parents = ic.shape("Ids"), ic.shape("Parents")
    if len(ids) != 3:
        ic.fail(f"Ids must be 3-D [max_time, batch, beam], got shape {list(ids)}")
    if len(parents) != 3 or any(a >= 0 and b >= 0 and a != b for a, b in zip(ids, parents)):
        ic.fail(f"Parents must have Ids' shape {list(ids)}, got {list(parents)}")
    ic.set_output("Out", ids, ic.dtype("Ids"))


GATHER_TREE = register_op(
    "gather_tree",
    "The full sequences of a beam search, traced back from the last step: Out[T-1] = Ids[T-1], and going back "
    "Out[t, b, k] = Ids[t, b, p] where p is the parent beam the step after t chose for beam k.",
    inputs=[In("Ids", "int32/int64 [max_time, batch, beam]: the id each beam chose at each step"),
            In("Parents", "Ids' shape and dtype: the beam each step's beam came from")],
    outputs=[Out("Out", "the sequences, Ids' shape and dtype")],
    infer_shape=_gather_tree_infer)


@GATHER_TREE.kernel()
def gather_tree(ctx, ins, attrs):
    ids, parents = ins
    xp = ctx.xp
    if ids.ndim != 3 or parents.shape != ids.shape:
        raise ValueError(f"Ids must be 3-D and Parents of its shape, got {list(ids.shape)} and "
                         f"{list(parents.shape)}")
    if ids.dtype.kind not in "iu" or parents.dtype.kind not in "iu":
        raise ValueError(f"Ids and Parents must be integers, got {ids.dtype} and {parents.dtype}")
    steps, batch, beam = ids.shape
    if steps == 0:
        return (ids,)
    if bool(xp.any((parents < 0) | (parents >= beam))):
        raise ValueError(f"Parents must name beams in [0, {beam})")
    rows = xp.arange(batch)[:, None]
    out = xp.empty_like(ids)
    out[steps - 1] = ids[steps - 1]
    beams = parents[steps - 1]
    for t in range(steps - 2, -1, -1):
        out[t] = ids[t][rows, beams]
        beams = parents[t][rows, beams]
    return (out,)
