"""Tensor plumbing: feed/fetch, constants and random initialisers, casts, reshapes, joins."""
from __future__ import annotations

from ..proto.framework_pb2 import AttrType as A
from ..registry import Attr, In, Out, at_least, register_op

FEED = register_op(
    "feed", "Copies column `col` of the feed list (the FEED_MINIBATCH variable the executor fills) to Out.",
    inputs=[In("X", "the feed list")], outputs=[Out("Out", "the fed tensor")],
    attrs=[Attr("col", A.INT, "which column of the feed list", 0, checks=(at_least(0),))])


@FEED.kernel()
def feed(ctx, ins, attrs):
    lst, col = ins[0], attrs["col"]
    if lst is None or col >= len(lst) or lst[col] is None:
        raise ValueError(f"the feed list has no column {col}: feed this program's inputs by name")
    return (lst[col],)


FETCH = register_op(
    "fetch", "Stores X in column `col` of the fetch list (a FETCH_LIST variable) the executor returns.",
    inputs=[In("X", "the tensor to fetch")], outputs=[Out("Out", "the fetch list")],
    attrs=[Attr("col", A.INT, "which column of the fetch list", 0, checks=(at_least(0),))])


@FETCH.kernel()
def fetch(ctx, ins, attrs):
    current = ctx.output_var("Out").value
    lst = list(current) if current else []  # a new list: kernels don't mutate
    col = attrs["col"]
    lst.extend([None] * (col + 1 - len(lst)))
    lst[col] = ins[0]
    return (lst,)
