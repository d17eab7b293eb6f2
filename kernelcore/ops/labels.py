"""Label helpers: label_smooth, sequence_mask (lengths into a mask) and shard_index (global ids into one
shard's)."""
from __future__ import annotations

from ..ir import dtypes
from ..ir.proto.framework_pb2 import AttrType as A
from ..ir.proto.framework_pb2 import VarType as VT
from ..ir.registry import Attr, In, Out, register_op
from ._infer import same_as
from .tensor import NUMPY_DTYPE, check_new_shape, one_int

LABEL_SMOOTH = register_op(
    "label_smooth", "Out = (1 - epsilon) X + epsilon PriorDist (epsilon / K without one, K = X's last dim).",
    inputs=[In("X", "one-hot labels [..., K]"), In("PriorDist", "[1, K] the prior", dispensable=True)],
    outputs=[Out("Out", "X's shape and dtype")], attrs=[Attr("epsilon", A.FLOAT, "the smoothing", 0.0)],
    infer_shape=same_as())


@LABEL_SMOOTH.kernel()
def label_smooth(ctx, ins, attrs):
    x, prior = ins
    eps = x.dtype.type(attrs["epsilon"])
    spread = prior.reshape(-1).astype(x.dtype) * eps if prior is not None else eps / x.dtype.type(x.shape[-1])
    return ((1 - eps) * x + spread,)


SEQUENCE_MASK = register_op(
    "sequence_mask", "Y[..., j] = j < X[...]: a mask of maxlen columns per length (maxlen < 0: the largest length).",
    inputs=[In("X", "int lengths"), In("MaxLenTensor", "(one int) overrides maxlen", dispensable=True)],
    outputs=[Out("Y", "X's shape + [maxlen], out_dtype")],
    attrs=[Attr("maxlen", A.INT, "the mask's width (< 0: max(X))", -1),
           Attr("out_dtype", A.INT, "(VarType) Y's dtype", VT.INT64, checks=(NUMPY_DTYPE,))])


@SEQUENCE_MASK.kernel()
def sequence_mask(ctx, ins, attrs):
    xp = ctx.xp
    x, max_t = ins
    maxlen = one_int(max_t, "MaxLenTensor") if max_t is not None else attrs["maxlen"]
    if maxlen < 0:
        maxlen = int(x.max()) if x.size else 0
    check_new_shape(list(x.shape) + [maxlen])
    return ((xp.arange(maxlen) < x[..., None]).astype(dtypes.to_numpy(attrs["out_dtype"])),)


SHARD_INDEX = register_op(
    "shard_index", "Out = X - shard_id * shard_size where X falls in shard `shard_id` (shard_size = ceil(index_num / "
                   "nshards)), else ignore_value.",
    inputs=[In("X", "int ids")], outputs=[Out("Out", "X's shape and dtype")],
    attrs=[Attr("index_num", A.INT, "how many ids there are"), Attr("nshards", A.INT, "how many shards"),
           Attr("shard_id", A.INT, "this shard"), Attr("ignore_value", A.INT, "the id outside it", -1)],
    infer_shape=same_as())


@SHARD_INDEX.kernel()
def shard_index(ctx, ins, attrs):
    x = ins[0]
    n, shards, sid = attrs["index_num"], attrs["nshards"], attrs["shard_id"]
    if shards <= 0 or not 0 <= sid < shards:
        raise ValueError(f"shard_index: shard_id {sid} must lie in [0, nshards={shards})")
    size = -(-n // shards)
    inside = (x // size) == sid
    return (ctx.xp.where(inside, x - sid * size, x.dtype.type(attrs["ignore_value"])),)
