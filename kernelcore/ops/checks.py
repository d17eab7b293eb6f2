"""The `assert` op (paddle.static.nn.control_flow.Assert, written by losses that check their inputs): the run
stops with a kernelcore error when Cond is false."""
from __future__ import annotations

from ..ir.proto.framework_pb2 import AttrType as A
from ..ir.registry import Attr, In, register_op
from ..runtime.place import to_host

ASSERT = register_op(
    "assert", "Stops the run when Cond (one bool) is false, naming the first `summarize` values of each Data tensor.",
    inputs=[In("Cond", "a one-element bool"), In("Data", "tensors to show when it fails", duplicable=True,
                                                   dispensable=True)],
    attrs=[Attr("summarize", A.LONG, "how many values of each Data tensor to show (-1: all)", -1)])


@ASSERT.kernel()
def assert_(ctx, ins, attrs):
    cond, data = ins
    if cond.size != 1:
        raise ValueError(f"assert: Cond must hold one value, got shape {list(cond.shape)}")
    if bool(cond.reshape(())):
        return ()
    n = attrs["summarize"]
    shown = [str(to_host(d.reshape(-1)[: None if n < 0 else n]).tolist()) for d in (data or [])]
    raise ValueError("the program's assert failed" + (f"; its data: {', '.join(shown)}" if shown else ""))
