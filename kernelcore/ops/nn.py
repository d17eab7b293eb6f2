"""Layers' ops: matrix products, embeddings, normalising activations."""
from __future__ import annotations

from ..ir.proto.framework_pb2 import AttrType as A
from ..ir.proto.framework_pb2 import VarType as VT
from ..ir.registry import Attr, In, Out, register_op

# Parameter-server attributes Paddle writes on lookup_table_v2 (is_sparse picks a SelectedRows
# gradient). Accepted so Paddle programs load; none changes the forward result.
_LOOKUP_EXTRAS = [
    Attr("is_sparse", A.BOOLEAN, "Paddle: make W's gradient SelectedRows (ignored here)", False, extra=True),
    Attr("is_distributed", A.BOOLEAN, "parameter-server hint (ignored)", False, extra=True),
    Attr("remote_prefetch", A.BOOLEAN, "parameter-server hint (ignored)", False, extra=True),
    Attr("trainer_id", A.INT, "parameter-server hint (ignored)", 0, extra=True),
    Attr("slot", A.INT, "parameter-server hint (ignored)", 0, extra=True),
    Attr("height_sections", A.LONGS, "parameter-server hint (ignored)", [], extra=True),
    Attr("epmap", A.STRINGS, "parameter-server hint (ignored)", [], extra=True),
    Attr("table_names", A.STRINGS, "parameter-server hint (ignored)", [], extra=True),
]

NO_PADDING = -1

# Slot order follows Paddle's current OpProto (2.6 and 3.x list Ids before W).
LOOKUP_TABLE_V2 = register_op(
    "lookup_table_v2",
    "Out[i...] = W[Ids[i...]]: the rows of the embedding table W picked by Ids; Out's shape is "
    "Ids.shape + [W.shape[1]] (no trailing-1 rule, unlike lookup_table). Rows whose id equals "
    "padding_idx are zeros; every other id must lie in [0, W.shape[0]).",
    inputs=[In("Ids", "(int32/int64 tensor, any shape) the row indices"),
            In("W", "(2-D tensor) the embedding table, one row per id")],
    outputs=[Out("Out", "the looked-up rows, W's dtype")],
    attrs=[Attr("padding_idx", A.LONG, "an id whose output rows are zeros; -1 = no padding. (Paddle's "
                "Python layer maps a negative padding_idx p to W.shape[0] + p before writing the op; "
                "the op itself compares ids with the value as given.)", NO_PADDING),
           *_LOOKUP_EXTRAS])


def _lookup_infer(ic):
    w, ids = ic.shape("W"), ic.shape("Ids")
    if len(w) != 2:
        ic.fail(f"W (the lookup table) must be 2-D, got shape {list(w)}")
    if ic.dtype("Ids") not in (VT.INT32, VT.INT64):
        ic.fail(f"Ids must be int32 or int64, got {ic.dtype_name(ic.dtype('Ids'))}")
    ic.set_output("Out", (*ids, w[1]), ic.dtype("W"))


LOOKUP_TABLE_V2.infer_shape = _lookup_infer


@LOOKUP_TABLE_V2.kernel()
def lookup_table_v2(ctx, ins, attrs):
    ids, w = ins
    xp = ctx.xp
    if ids.dtype.kind not in "iu":
        raise TypeError(f"Ids must be int32 or int64, got {ids.dtype}")
    if w.ndim != 2:
        raise ValueError(f"W must be 2-D, got shape {list(w.shape)}")
    rows, pad = w.shape[0], attrs["padding_idx"]
    padded = (ids == pad) if pad != NO_PADDING else None
    bad = (ids < 0) | (ids >= rows)
    if padded is not None:
        bad &= ~padded
    if bool(bad.any()):  # one host sync on the GPU; Paddle checks every id too
        raise IndexError(f"Ids must lie in [0, {rows}) (W has {rows} rows), got {int(ids[bad].reshape(-1)[0])}")
    out = xp.take(w, xp.clip(ids, 0, rows - 1) if padded is not None else ids, axis=0)
    if padded is not None:
        out[padded] = 0  # `out` is a fresh array: zeroing it mutates no input
    return (out,)
