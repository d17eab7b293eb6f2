"""dropout, with Paddle's slots (X, Seed / Out, Mask) and its two implementations.

Training versus inference: Paddle decides by the `is_test` attribute alone. kernelcore also has the
executor's training flag, so the op runs in inference mode when `is_test` is true
*or* the run is not a training run (`Executor.run(..., training=False)`, the default). A program built
for training therefore drops units only in runs made with training=True; a program whose dropout says
is_test=true never drops.
"""
from __future__ import annotations

import numpy as np

from ..ir.proto.framework_pb2 import AttrType as A
from ..ir.proto.framework_pb2 import VarType as VT
from ..ir.registry import Attr, Check, In, Out, register_op

UPSCALE, DOWNGRADE = "upscale_in_train", "downgrade_in_infer"

DROPOUT = register_op(
    "dropout",
    "Randomly zeroes elements of X with probability dropout_prob while training. downgrade_in_infer "
    "(default): train Out = X * Mask, inference Out = X * (1 - dropout_prob). upscale_in_train: train "
    "Out = X * Mask / (1 - dropout_prob), inference Out = X. Mask (uint8, X's shape) holds 1 for kept "
    "elements; it is written only in training mode. Inference mode: is_test, or a run that is not a "
    "training run.",
    inputs=[In("X", "the input tensor"),
            In("Seed", "(one int32) a seed that wins over fix_seed/seed", dispensable=True)],
    outputs=[Out("Out", "the result, X's shape and dtype"),
             # Paddle declares Mask intermediate and extra: inference programs saved with clip_extra name none
             Out("Mask", "uint8, X's shape: 1 where X was kept (training mode only)", intermediate=True,
                 dispensable=True)],
    attrs=[Attr("dropout_prob", A.FLOAT, "the probability of zeroing an element", 0.5,
                checks=(Check("in [0, 1]", lambda v: 0.0 <= v <= 1.0),)),
           Attr("is_test", A.BOOLEAN, "true: inference mode whatever the run (false: the run's training "
                "flag decides)", False),
           Attr("dropout_implementation", A.STRING, "'downgrade_in_infer' or 'upscale_in_train'", DOWNGRADE,
                checks=(Check(f"{DOWNGRADE!r} or {UPSCALE!r}", lambda v: v in (DOWNGRADE, UPSCALE)),)),
           # Paddle lists these two among its "extra" attributes (kept out of the OpProto). kernelcore
           # declares them, since the executor hands kernels declared attributes only.
           Attr("fix_seed", A.BOOLEAN, "use `seed` for every run (tests, debugging)", False),
           Attr("seed", A.INT, "the seed used when fix_seed is true", 0)])


def _infer(ic):
    ic.set_output("Out", ic.shape("X"), ic.dtype("X"))
    if ic.output_names("Mask"):
        ic.set_output("Mask", ic.shape("X"), VT.UINT8)


DROPOUT.infer_shape = _infer


def is_inference(ctx, attrs) -> bool:
    return bool(attrs["is_test"]) or not ctx.training


@DROPOUT.kernel()
def dropout(ctx, ins, attrs):
    x, seed_t = ins
    xp = ctx.xp
    p = attrs["dropout_prob"]
    upscale = attrs["dropout_implementation"] == UPSCALE
    if is_inference(ctx, attrs):
        return (x.copy() if upscale else x * x.dtype.type(1.0 - p), None)
    if p == 1.0:
        return xp.zeros_like(x), xp.zeros(x.shape, dtype=np.uint8)
    # Paddle's priority: the Seed tensor, else `seed` when fix_seed, else the executor's generator.
    seed = int(np.asarray(seed_t.get() if hasattr(seed_t, "get") else seed_t).reshape(-1)[0]) \
        if seed_t is not None else (attrs["seed"] if attrs["fix_seed"] else 0)
    rng = ctx.rng(seed)
    if ctx.place.kind == "cpu":
        u = rng.random(x.shape, dtype=np.float32)
    else:
        u = rng.random_sample(size=x.shape, dtype=np.float32)
    keep = u >= np.float32(p)
    mask = keep.astype(np.uint8)
    out = xp.where(keep, x, x.dtype.type(0))
    if upscale:
        out = out / x.dtype.type(1.0 - p)
    return out.astype(x.dtype, copy=False), mask
